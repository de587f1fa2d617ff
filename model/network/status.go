package network

import "google.golang.org/grpc/codes"

// Status is a gRPC status: a code and a message. The zero value is OK.
// It has the same fields as xdsclient.Status, so one converts to the other.
type Status struct {
	Code    codes.Code
	Message string
}

// OK reports whether s is the OK status.
func (s Status) OK() bool { return s.Code == codes.OK }

// String formats the status as "Code: message", or the code alone when
// there is no message.
func (s Status) String() string {
	if s.Message == "" {
		return s.Code.String()
	}
	return s.Code.String() + ": " + s.Message
}

// The statuses the network hands to streams and picks. Their messages are
// constants, so producing one allocates nothing; the wording follows what
// grpc-go reports in the same situation, shortened.
var (
	// StatusRefused fails a fail-fast pick on a channel in
	// TRANSIENT_FAILURE whose last connect attempt was refused.
	StatusRefused = Status{codes.Unavailable, "connection error: connect: connection refused"}
	// StatusConnectTimeout fails a fail-fast pick on a channel in
	// TRANSIENT_FAILURE whose last connect attempt reached its deadline.
	StatusConnectTimeout = Status{codes.Unavailable, "connection error: connect: deadline exceeded"}
	// StatusConnectionReset fails the streams of a connection the server
	// closed abruptly, as when its process dies or restarts.
	StatusConnectionReset = Status{codes.Unavailable, "error reading from server: connection reset by peer"}
	// StatusDrained fails the streams still open on a connection when the
	// server closes it after a GOAWAY and its grace period.
	StatusDrained = Status{codes.Unavailable, "the connection is draining and was closed by the server"}
	// StatusStreamReset is the status with which a server ends an ADS
	// stream after a response ([StreamResetAfterResponse]), as a server
	// handler that returns codes.Unavailable does.
	StatusStreamReset = Status{codes.Unavailable, "the server ended the stream after a response"}
	// StatusMessageLost fails a stream whose message the network lost.
	StatusMessageLost = Status{codes.Unavailable, "stream reset: message lost in the network"}
	// StatusKeepaliveTimeout fails the streams of a connection whose
	// keepalive ping went unanswered.
	StatusKeepaliveTimeout = Status{codes.Unavailable, "keepalive ping failed to receive ACK within timeout"}
	// StatusChannelClosed fails a pick on a channel that was shut down.
	// grpc-go reports codes.Canceled for a closing ClientConn.
	StatusChannelClosed = Status{codes.Canceled, "grpc: the client connection is closing"}
)
