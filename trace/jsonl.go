package trace

import (
	"bufio"
	"encoding/json"
	"io"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// jsonEvent is one line of WriteJSONLines: the event's fields that its
// kind uses, its sentence and its rule.
type jsonEvent struct {
	AtNS     int64       `json:"at_ns"`
	At       string      `json:"at"`
	Kind     string      `json:"kind"`
	Client   string      `json:"client"`
	Target   string      `json:"target"`
	Server   string      `json:"server,omitempty"`
	Type     string      `json:"type,omitempty"`
	Version  *string     `json:"version,omitempty"`
	Nonce    *string     `json:"nonce,omitempty"`
	Names    []string    `json:"names,omitempty"`
	ACK      bool        `json:"ack,omitempty"`
	NACK     bool        `json:"nack,omitempty"`
	Received *bool       `json:"response_received,omitempty"`
	Spurious bool        `json:"spurious,omitempty"`
	From     string      `json:"from,omitempty"`
	To       string      `json:"to,omitempty"`
	Status   *jsonStatus `json:"status,omitempty"`
	Timer    string      `json:"timer,omitempty"`
	DelayNS  int64       `json:"delay_ns,omitempty"`
	Callback string      `json:"callback,omitempty"`
	Resource *bool       `json:"resource,omitempty"`
	ErrCause string      `json:"error_cause,omitempty"`
	RPC      uint64      `json:"rpc,omitempty"`
	Attempt  int         `json:"attempt,omitempty"`
	Backend  string      `json:"backend,omitempty"`
	Code     string      `json:"code,omitempty"`
	Cause    string      `json:"cause,omitempty"`
	// LatencyNS is an rpc event's latency: from its start to its final
	// status; 0 is told (an RPC that failed at once).
	LatencyNS *int64 `json:"latency_ns,omitempty"`
	Count     int    `json:"count,omitempty"`
	SinceNS   *int64 `json:"since_ns,omitempty"`
	Detail    string `json:"detail,omitempty"`
	Text      string `json:"text"`
	Rule      string `json:"rule,omitempty"`
}

type jsonStatus struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// WriteJSONLines writes evs to w, one JSON object a line: at_ns and at
// (the virtual time), kind, client, target, the fields the kind uses,
// text (Describe's sentence) and rule.
func WriteJSONLines(w io.Writer, evs []fleet.TraceEvent) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range evs {
		if err := enc.Encode(toJSON(&evs[i])); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func toJSON(e *fleet.TraceEvent) *jsonEvent {
	j := &jsonEvent{AtNS: int64(e.At), At: Dur(e.At), Kind: e.Kind.String(), Client: e.Client, Target: e.Target,
		Server: e.Server, Text: Describe(e), Rule: e.Rule, Detail: e.Detail}
	str := func(s string) *string { return &s }
	boolp := func(b bool) *bool { return &b }
	switch e.Kind {
	case fleet.TraceSend, fleet.TraceReceive, fleet.TraceRequest, fleet.TraceResponse:
		j.Type, j.Version, j.Nonce, j.Names = e.Type.String(), str(e.Version), str(e.Nonce), e.Names
		j.ACK, j.NACK = e.ACK, e.NACK
		if e.NACK {
			j.Status = &jsonStatus{code(e.Status.Code), e.Status.Message}
		}
	case fleet.TraceStreamFailed:
		j.Status = &jsonStatus{code(e.Status.Code), e.Status.Message}
		j.Received = boolp(e.Received)
	case fleet.TraceConnectivity:
		j.From, j.To = e.From.String(), e.To.String()
		if e.To == network.TransientFailure {
			j.DelayNS = int64(e.Delay)
		}
	case fleet.TraceTimerArmed, fleet.TraceTimerCancelled, fleet.TraceRetryTimer, fleet.TraceResourceTimer:
		j.Timer = e.Timer.String()
		j.DelayNS = int64(e.Delay)
		j.Spurious = e.Spurious
		if e.Timer.Kind == xdsclient.ResourceTimer {
			j.Type = e.Type.String()
			j.Names = []string{e.Timer.Name}
		}
	case fleet.TraceNotify:
		j.Type, j.Names = e.Type.String(), e.Names
		j.Callback = "OnResourceChanged"
		if e.Notification == xdsclient.AmbientError {
			j.Callback = "OnAmbientError"
		}
		j.Resource = boolp(e.Resource)
		if e.Resource {
			j.Version = str(e.Version)
		} else {
			j.Status = &jsonStatus{code(e.Status.Code), e.Status.Message}
			j.ErrCause = e.ErrorCause.String()
		}
	case fleet.TracePick, fleet.TraceAttempt, fleet.TraceRetry, fleet.TraceRPC, fleet.TraceWindowOpen:
		j.RPC, j.Attempt, j.Backend = e.RPC, e.Attempt, e.Backend
		j.DelayNS = int64(e.Delay)
		if e.Kind != fleet.TracePick || e.Code != codes.OK {
			j.Code = code(e.Code)
		}
		if e.Code != codes.OK || e.Cause != 0 {
			j.Cause = e.Cause.String()
		}
		if e.Kind == fleet.TraceRPC {
			latency := int64(e.Latency)
			j.LatencyNS = &latency
		}
	case fleet.TraceWindowClose:
		j.Count, j.Cause = e.Count, e.Cause.String()
		since := int64(e.Since)
		j.SinceNS = &since
	case fleet.TraceSteadyRPCs:
		j.Count = e.Count
		since := int64(e.Since)
		j.SinceNS = &since
	case fleet.TraceClientStop:
		j.Count, j.DelayNS = e.Count, int64(e.Delay)
	}
	return j
}
