package dataplane

// Cause is the root cause of a failed RPC, as only a simulator can know it:
// it compares what the client believed with what was really true.
type Cause uint8

// Causes, in the order reports list them. When the failures of one window
// have different causes, the window takes the most frequent one, and the
// first in this order on a tie.
const (
	// NoConfigCPUnreachable: the channel had no config because no control
	// plane of the bootstrap could be reached: no channel to one was READY
	// with a stream the network let through.
	NoConfigCPUnreachable Cause = iota
	// NoConfigResourceNotSent: the channel had no config although a control
	// plane was reachable and its stream up: the server had not sent a
	// resource the config needs (withheld, never answered, or still in its
	// queue).
	NoConfigResourceNotSent
	// ResourceTimerSpurious: the does-not-exist timer fired (gRFC A57)
	// while the server held the resource: a slow or overloaded server, or
	// a channel that took longer than the timer to connect.
	ResourceTimerSpurious
	// ResourceDoesNotExist: the timer fired and the server really had no
	// such resource.
	ResourceDoesNotExist
	// NACK: a resource of the config failed validation (gRFC A88 data
	// error) and the client had nothing cached to keep using.
	NACK
	// ResourceDeleted: the server deleted a resource of the config.
	ResourceDeleted
	// ResourceError: the server reported a per-resource error (xRFC TP3).
	ResourceError
	// NoHealthyEndpoint: the config named no endpoint the load balancer may
	// use, or every one it names is down while the config is current.
	NoHealthyEndpoint
	// BackendDownStaleEDS: the client sent to a backend that was down
	// while its control plane already held newer endpoints: the client's
	// EDS was stale.
	BackendDownStaleEDS
	// BackendDown: the backend died under the RPC, or every backend was
	// down, and the control plane knew no better.
	BackendDown
	// BackendError: the backend answered with an error.
	BackendError
	// Deadline: the RPC ran past its deadline (a slow backend, or retries
	// that did not finish in time).
	Deadline
	// NumCauses is the number of causes.
	NumCauses
)

var causeNames = [NumCauses]string{
	"no_config_cp_unreachable",
	"no_config_resource_not_sent",
	"resource_timer_spurious",
	"resource_does_not_exist",
	"nack",
	"resource_deleted",
	"resource_error",
	"no_healthy_endpoint",
	"backend_down_stale_eds",
	"backend_down",
	"backend_error",
	"deadline",
}

// String names the cause as summary.json and reports spell it.
func (c Cause) String() string {
	if c < NumCauses {
		return causeNames[c]
	}
	return "unknown"
}

// ParseCause returns the cause String names; ok is false for any other
// name.
func ParseCause(name string) (c Cause, ok bool) {
	for c := Cause(0); c < NumCauses; c++ {
		if causeNames[c] == name {
			return c, true
		}
	}
	return 0, false
}

var causeExplanations = [NumCauses]string{
	"no config: no control plane of the bootstrap could be reached",
	"no config: a reachable control plane has not sent a resource the config needs",
	"the does-not-exist timer fired while a server held the resource (spurious)",
	"the does-not-exist timer fired and no server has the resource",
	"a resource of the config was NACKed, with nothing cached to keep using",
	"the server deleted a resource of the config",
	"the server reported an error for a resource of the config (xRFC TP3)",
	"the config names no endpoint the load balancer may use",
	"the backends the client has are down while its control plane already lists others: stale EDS",
	"the backend is down and the control plane knows no better",
	"the backend answered with an error",
	"the RPC ran past its deadline",
}

// Explain says in a few words what the cause means.
func (c Cause) Explain() string {
	if c < NumCauses {
		return causeExplanations[c]
	}
	return "unknown"
}
