package trace

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// Describe says in words what e records: one sentence, without the time,
// the client or the rule.
func Describe(e *fleet.TraceEvent) string {
	switch e.Kind {
	case fleet.TraceClientStart:
		return "the client process starts: a new XdsClient with an empty cache watches the target's Listener"
	case fleet.TraceClientStop:
		return fmt.Sprintf("the client process stops for restart %d, down for %s: its cache, channels and RPCs go", e.Count, Dur(e.Delay))
	case fleet.TraceConnect:
		return "connect attempt to " + e.Server
	case fleet.TraceConnectTimeout:
		return "the connect attempt to " + e.Server + " reached its deadline"
	case fleet.TraceConnectivity:
		s := fmt.Sprintf("channel to %s: %v → %v", e.Server, e.From, e.To)
		if e.To == network.TransientFailure && e.Delay > 0 {
			s += ", reconnect in " + Dur(e.Delay)
		}
		return s
	case fleet.TraceKeepalive:
		return "keepalive closed the transport to " + e.Server
	case fleet.TraceStreamPending:
		return "ADS call to " + e.Server + " created (wait_for_ready): it waits in the channel for READY"
	case fleet.TraceStreamOpen:
		return "ADS stream to " + e.Server + " open"
	case fleet.TraceStreamClose:
		return "ADS stream to " + e.Server + " closed"
	case fleet.TraceStreamFailed:
		if e.Received {
			return fmt.Sprintf("ADS stream to %s ended (%s) after a response: no failure, the stream restarts", e.Server, status(e.Status))
		}
		return fmt.Sprintf("ADS stream to %s failed before any response (%s): a connectivity failure", e.Server, status(e.Status))
	case fleet.TraceSend:
		what := "request"
		switch {
		case e.NACK:
			what = "NACK"
		case e.ACK:
			what = "ACK"
		case len(e.Names) == 0:
			what = "request (unsubscribe all)"
		}
		s := fmt.Sprintf("→ %s %s %v %s version %q nonce %q", e.Server, what, e.Type, names(e.Names), e.Version, e.Nonce)
		if e.NACK {
			s += ": " + e.Status.Message
		}
		return s
	case fleet.TraceReceive:
		s := fmt.Sprintf("← %s response %v %s version %q nonce %q", e.Server, e.Type, names(e.Names), e.Version, e.Nonce)
		if e.Detail != "" {
			s += "; invalid: " + e.Detail
		}
		return s
	case fleet.TraceRequest:
		return fmt.Sprintf("%s received %v %s version %q nonce %q", e.Server, e.Type, names(e.Names), e.Version, e.Nonce)
	case fleet.TraceResponse:
		return fmt.Sprintf("%s sent %v version %q nonce %q", e.Server, e.Type, e.Version, e.Nonce)
	case fleet.TraceTimerArmed:
		if e.Timer.Kind == xdsclient.RetryTimer {
			return fmt.Sprintf("ADS stream to %s retries in %s", e.Server, Dur(e.Delay))
		}
		return fmt.Sprintf("does-not-exist timer for %v %s on %s: %s", e.Type, e.Timer.Name, e.Server, Dur(e.Delay))
	case fleet.TraceTimerCancelled:
		if e.Timer.Kind == xdsclient.RetryTimer {
			return "ADS retry timer for " + e.Server + " cancelled"
		}
		return fmt.Sprintf("does-not-exist timer for %v %s on %s cancelled", e.Type, e.Timer.Name, e.Server)
	case fleet.TraceRetryTimer:
		return "ADS retry timer for " + e.Server + " fired"
	case fleet.TraceResourceTimer:
		truth := "no bootstrap server has it either"
		if e.Spurious {
			truth = "spurious: a bootstrap server held it"
		}
		return fmt.Sprintf("does-not-exist timer for %v %s on %s fired (%s)", e.Type, firstName(e.Names), e.Server, truth)
	case fleet.TraceNotify:
		return notification(e)
	case fleet.TraceFallback:
		return "falls back to " + e.Server
	case fleet.TraceRevert:
		return "reverts to " + e.Server + ", closing the lower-priority channels"
	case fleet.TracePick:
		return pick(e)
	case fleet.TraceAttempt:
		if e.Code == codes.OK {
			return fmt.Sprintf("RPC #%d attempt %d: OK", e.RPC, e.Attempt)
		}
		return fmt.Sprintf("RPC #%d attempt %d: %v (%v)", e.RPC, e.Attempt, code(e.Code), e.Cause)
	case fleet.TraceRetry:
		if e.Throttled {
			return fmt.Sprintf("RPC #%d: no retry, the throttle is below half", e.RPC)
		}
		return fmt.Sprintf("RPC #%d retries in %s", e.RPC, Dur(e.Delay))
	case fleet.TraceRPC:
		if e.Code == codes.OK && e.Detail != "" {
			return fmt.Sprintf("RPC #%d: OK in %s, %s", e.RPC, Dur(e.Latency), e.Detail)
		}
		if e.Code == codes.OK {
			return fmt.Sprintf("RPC #%d: OK in %s", e.RPC, Dur(e.Latency))
		}
		return fmt.Sprintf("RPC #%d failed %v (%v) in %s", e.RPC, code(e.Code), e.Cause, Dur(e.Latency))
	case fleet.TraceSteadyRPCs:
		return fmt.Sprintf("%d RPCs since %s went at once to READY backends and succeeded", e.Count, Dur(e.Since))
	case fleet.TraceWindowOpen:
		return fmt.Sprintf("RPC failure window opens: RPC #%d failed %v, %v: %s", e.RPC, code(e.Code), e.Cause, e.Cause.Explain())
	case fleet.TraceWindowClose:
		return fmt.Sprintf("RPC failure window closes: %s to %s (%s), %d failed RPCs, root cause %v",
			Dur(e.Since), Dur(e.At), Dur(e.At-e.Since), e.Count, e.Cause)
	}
	return e.Kind.String()
}

func notification(e *fleet.TraceEvent) string {
	return notificationFor(e, []string{fmt.Sprintf("%v %s", e.Type, firstName(e.Names))})
}

// notificationFor tells watcher callback e, made to the watchers of the
// resources named (one or more, alike).
func notificationFor(e *fleet.TraceEvent, resources []string) string {
	cb := "OnResourceChanged"
	if e.Notification == xdsclient.AmbientError {
		cb = "OnAmbientError"
	}
	who := "watcher of " + resources[0]
	if len(resources) > 1 {
		who = "watchers of " + strings.Join(resources, ", ")
	}
	switch {
	case e.Resource:
		return fmt.Sprintf("%s: %s(version %q)", who, cb, e.Version)
	case e.Status.Code == codes.OK:
		return fmt.Sprintf("%s: %s(OK): the earlier error is over", who, cb)
	case e.Notification == xdsclient.ResourceChanged:
		return fmt.Sprintf("%s: %s(%s): the resource is gone for the channel", who, cb, status(e.Status))
	}
	return fmt.Sprintf("%s: %s(%s): the cached resource stays in use", who, cb, status(e.Status))
}

func pick(e *fleet.TraceEvent) string {
	if e.Code != codes.OK {
		return fmt.Sprintf("RPC #%d attempt %d: no pick (%s)", e.RPC, e.Attempt, e.Detail)
	}
	s := fmt.Sprintf("RPC #%d attempt %d → %s", e.RPC, e.Attempt, e.Backend)
	if e.Delay > 0 {
		s += fmt.Sprintf(" after %s (its subchannel connects)", Dur(e.Delay))
	}
	return s
}

func names(ns []string) string { return "[" + strings.Join(ns, " ") + "]" }

func firstName(ns []string) string {
	if len(ns) == 0 {
		return ""
	}
	return ns[0]
}

// code names a status code as grpc's doc/statuscodes.md does
// ("DEADLINE_EXCEEDED").
func code(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.Canceled:
		return "CANCELLED"
	}
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// status formats a gRPC status as "CODE: message".
func status(st xdsclient.Status) string {
	if st.Message == "" {
		return code(st.Code)
	}
	return code(st.Code) + ": " + st.Message
}

// Dur formats a virtual time or duration to the millisecond: "1m15.432s".
func Dur(d time.Duration) string { return d.Round(time.Millisecond).String() }
