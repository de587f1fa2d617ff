package controlplane

import (
	"fmt"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
)

// ResourceType is one of the four xDS resource types a server publishes.
// The values equal model/xdsclient's ResourceType values (LDS=0 … EDS=3),
// so the wiring converts between them with a cast.
type ResourceType uint8

// The resource types, in the order the server applies a change and sorts
// the responses of one stream.
const (
	LDS ResourceType = iota
	RDS
	CDS
	EDS
	// NumTypes is the number of resource types.
	NumTypes
)

var typeURLs = [NumTypes]string{resourcev3.ListenerType, resourcev3.RouteType, resourcev3.ClusterType, resourcev3.EndpointType}
var typeNames = [NumTypes]string{"LDS", "RDS", "CDS", "EDS"}

// TypeURL returns t's type URL, such as
// "type.googleapis.com/envoy.config.listener.v3.Listener".
func (t ResourceType) TypeURL() string { return typeURLs[t] }

// String returns "LDS", "RDS", "CDS" or "EDS".
func (t ResourceType) String() string {
	if t < NumTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("ResourceType(%d)", t)
}

// TypeFromURL returns the resource type of a type URL.
func TypeFromURL(url string) (ResourceType, bool) {
	for t := LDS; t < NumTypes; t++ {
		if typeURLs[t] == url {
			return t, true
		}
	}
	return 0, false
}

// StreamID identifies one ADS stream on a server. The wiring chooses it;
// it may be reused once the stream is closed.
type StreamID uint64

// Status is a gRPC status: a code and a message.
type Status struct {
	Code    codes.Code // the gRPC status code
	Message string     // what went wrong, as a sentence
}

// String formats the status as "Code: message".
func (s Status) String() string {
	if s.Message == "" {
		return s.Code.String()
	}
	return s.Code.String() + ": " + s.Message
}

// StreamError is a stream the server refuses or ends: the wiring fails the
// client's ADS stream with Status.
type StreamError struct {
	Server string   // the server's name
	Stream StreamID // the stream refused or ended
	Status Status   // the status the client's stream fails with
}

// Error formats the error as a sentence.
func (e *StreamError) Error() string {
	return fmt.Sprintf("controlplane: server %q: stream %d: %v", e.Server, e.Stream, e.Status)
}
