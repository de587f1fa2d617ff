package xdsclient

import (
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ResourceStatus is one cache entry as CSDS reports it (gRFC A40; envoy
// service/status/v3 ClientConfig.GenericXdsConfig), in plain Go.
type ResourceStatus struct {
	Authority string
	Type      ResourceType
	Name      string
	Status    adminpb.ClientResourceStatus
	// Version is the version_info of the last update.
	Version string
	// Resource is the cached resource, nil if none.
	Resource *Decoded
	// LastUpdated is the virtual time of the last ACKed update, when
	// Updated; an entry whose resource a deletion or the timer took away
	// has none (CSDS last_updated).
	LastUpdated time.Duration
	Updated     bool
	// Error is the last error, nil if none: its status, the response
	// version that carried it and when.
	Error        *Status
	ErrorVersion string
	ErrorAt      time.Duration
	// Watchers is how many watchers the entry has.
	Watchers int
}

// Resources lists every cache entry, by authority, type, then name.
func (c *Client) Resources() []ResourceStatus {
	var out []ResourceStatus
	for i := range c.auths {
		a := &c.auths[i]
		for t := ResourceType(0); t < numTypes; t++ {
			for _, e := range a.of(t) {
				st, name := e.st, e.name
				rs := ResourceStatus{
					Authority: a.name, Type: t, Name: name, Status: st.status(), Version: st.version,
					Resource: st.cache, LastUpdated: st.updated, Updated: st.hasUpdate, Watchers: len(st.watchers),
				}
				if e := st.err(); e != nil {
					s := e.status
					rs.Error, rs.ErrorVersion, rs.ErrorAt = &s, e.version, e.at
				}
				out = append(out, rs)
			}
		}
	}
	return out
}

// CSDS returns the client's state as a CSDS ClientConfig with
// client_scope = Target (gRFC A71 "Update CSDS to aggregate configs from
// multiple XdsClient instances"). Virtual times are reported as timestamps
// since the Unix epoch.
func (c *Client) CSDS() *statuspb.ClientConfig {
	cc := &statuspb.ClientConfig{Node: c.node, ClientScope: c.target}
	for _, rs := range c.Resources() {
		g := &statuspb.ClientConfig_GenericXdsConfig{
			TypeUrl:      rs.Type.TypeURL(),
			Name:         rs.Name,
			VersionInfo:  rs.Version,
			ClientStatus: rs.Status,
		}
		if rs.Updated {
			g.LastUpdated = virtualTimestamp(rs.LastUpdated)
		}
		if rs.Resource != nil {
			g.XdsConfig = rs.Resource.Raw
		}
		if rs.Error != nil {
			g.ErrorState = &adminpb.UpdateFailureState{
				LastUpdateAttempt: virtualTimestamp(rs.ErrorAt),
				Details:           rs.Error.Message,
				VersionInfo:       rs.ErrorVersion,
			}
		}
		cc.GenericXdsConfigs = append(cc.GenericXdsConfigs, g)
	}
	return cc
}

func virtualTimestamp(d time.Duration) *timestamppb.Timestamp {
	return timestamppb.New(time.Unix(0, int64(d)).UTC())
}

// NumStatuses bounds the CSDS statuses a cache entry can have:
// adminpb.ClientResourceStatus values are below it.
const NumStatuses = int(adminpb.ClientResourceStatus_TIMEOUT) + 1

// AddStatusCounts adds to n how many cache entries the client holds in each
// CSDS status, indexed by the adminpb.ClientResourceStatus value. It
// equals counting Resources by Status, without the walk.
func (c *Client) AddStatusCounts(n *[NumStatuses]int) {
	for s, k := range c.statuses {
		n[s] += int(k)
	}
}

// setStatus moves a cache entry to status s.
func (c *Client) setStatus(st *resourceState, s adminpb.ClientResourceStatus) {
	c.statuses[st.stat]--
	c.statuses[s]++
	from := st.cacheState()
	st.stat = uint8(s)
	c.cacheMoved(st, from)
}
