package xdsclient

import adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

// NumResourceTypes is the number of resource types: LDS, RDS, CDS, EDS.
const NumResourceTypes = int(numTypes)

// CacheState is a cache entry's grpc.xds.cache_state, the label of gRFC
// A78's grpc.xds_client.resources metric: A78's requested,
// does_not_exist, acked, nacked and nacked_but_cached, gRFC A88's
// received_error and received_error_but_cached ("XdsClient Metric
// Labels"), and C-core's does_not_exist_but_cached and timeout
// (xds_client.cc ResourceState::CacheStateString).
type CacheState uint8

// Cache states.
const (
	CacheRequested CacheState = iota
	CacheDoesNotExist
	CacheDoesNotExistButCached
	CacheACKed
	CacheNACKed
	CacheNACKedButCached
	CacheReceivedError
	CacheReceivedErrorButCached
	CacheTimeout
	// NumCacheStates bounds the cache states.
	NumCacheStates
)

var cacheStateNames = [NumCacheStates]string{"requested", "does_not_exist", "does_not_exist_but_cached", "acked", "nacked",
	"nacked_but_cached", "received_error", "received_error_but_cached", "timeout"}

// String returns the label value ("nacked_but_cached").
func (s CacheState) String() string {
	if s < NumCacheStates {
		return cacheStateNames[s]
	}
	return "unknown"
}

// Status is the CSDS status of an entry in the cache state.
func (s CacheState) Status() adminpb.ClientResourceStatus {
	switch s {
	case CacheDoesNotExist, CacheDoesNotExistButCached:
		return adminpb.ClientResourceStatus_DOES_NOT_EXIST
	case CacheACKed:
		return adminpb.ClientResourceStatus_ACKED
	case CacheNACKed, CacheNACKedButCached:
		return adminpb.ClientResourceStatus_NACKED
	case CacheReceivedError, CacheReceivedErrorButCached:
		return adminpb.ClientResourceStatus_RECEIVED_ERROR
	case CacheTimeout:
		return adminpb.ClientResourceStatus_TIMEOUT
	}
	return adminpb.ClientResourceStatus_REQUESTED
}

// cacheState is the entry's cache state: its CSDS status, and for those
// that say so, whether a resource is cached (C-core CacheStateString).
func (st *resourceState) cacheState() CacheState {
	cached := st.cache != nil
	switch st.status() {
	case adminpb.ClientResourceStatus_DOES_NOT_EXIST:
		if cached {
			return CacheDoesNotExistButCached
		}
		return CacheDoesNotExist
	case adminpb.ClientResourceStatus_ACKED:
		return CacheACKed
	case adminpb.ClientResourceStatus_NACKED:
		if cached {
			return CacheNACKedButCached
		}
		return CacheNACKed
	case adminpb.ClientResourceStatus_RECEIVED_ERROR:
		if cached {
			return CacheReceivedErrorButCached
		}
		return CacheReceivedError
	case adminpb.ClientResourceStatus_TIMEOUT:
		return CacheTimeout
	}
	return CacheRequested
}

// MetricsSink sums gRFC A78's XdsClient metrics over the clients that
// record into it (Config.Metrics), as each change happens, the way a
// real client records to its metrics recorder: a gauge is the sum of the
// clients' values now, a counter the sum of their counts so far. A
// retired client (Client.Retire) takes its gauges out and leaves its
// counts in, as a restarted process's counter starts again from zero
// while the fleet's sum goes on. Reading a sink costs nothing per
// client, so a fleet samples its metrics in time independent of its
// size. The clients sharing a sink must have the same servers.
type MetricsSink struct {
	// Servers are the metrics of each server, indexed as Client.Servers.
	Servers []ServerSink
	// Resources is grpc.xds_client.resources, by type and cache state,
	// for the authority "#old" (the clients' bootstraps name no
	// authorities in the simulations that use sinks).
	Resources [NumResourceTypes][NumCacheStates]int
}

// ServerSink is one server's A78 metrics, summed over clients.
type ServerSink struct {
	// Connected is grpc.xds_client.connected: how many clients have a
	// working ADS stream to the server (ServerMetrics.Connected).
	Connected int
	// ServerFailures, ResourceUpdatesValid and ResourceUpdatesInvalid
	// are the counters of ServerMetrics, summed.
	ServerFailures         int
	ResourceUpdatesValid   [NumResourceTypes]int
	ResourceUpdatesInvalid [NumResourceTypes]int
}

// server returns server i's sums, growing the list to hold it.
func (s *MetricsSink) server(i int) *ServerSink {
	for len(s.Servers) <= i {
		s.Servers = append(s.Servers, ServerSink{})
	}
	return &s.Servers[i]
}

// recordGauges brings the sink's connected gauges up to date with the
// channels, at the end of every input.
func (c *Client) recordGauges() {
	for i := range c.servers {
		ch := c.servers[i].ch
		if ch == nil {
			continue
		}
		if on := ch.refs > 0 && ch.connected; on != ch.recorded {
			ch.recorded = on
			if on {
				c.sink.server(ch.idx).Connected++
			} else {
				c.sink.server(ch.idx).Connected--
			}
		}
	}
}

// countUpdate counts a resource of type typ that server ch sent: valid or
// not (gRFC A78 resource_updates_valid, resource_updates_invalid).
func (c *Client) countUpdate(ch int, typ ResourceType, valid bool) {
	m := &c.channel(ch).counts
	if valid {
		m.valid[typ]++
	} else {
		m.invalid[typ]++
	}
	if c.sink != nil {
		s := c.sink.server(ch)
		if valid {
			s.ResourceUpdatesValid[typ]++
		} else {
			s.ResourceUpdatesInvalid[typ]++
		}
	}
}

// entryAdded counts a new cache entry; entryRemoved one that goes.
func (c *Client) entryAdded(st *resourceState) {
	c.statuses[st.stat]++
	if c.sink != nil {
		c.sink.Resources[st.typ][st.cacheState()]++
	}
}

func (c *Client) entryRemoved(st *resourceState) {
	c.statuses[st.stat]--
	if c.sink != nil {
		c.sink.Resources[st.typ][st.cacheState()]--
	}
}

// setCache sets the entry's cached resource.
func (c *Client) setCache(st *resourceState, d *Decoded) {
	from := st.cacheState()
	st.cache = d
	c.cacheMoved(st, from)
}

// cacheMoved records that the entry, which was in cache state from, may
// be in another now.
func (c *Client) cacheMoved(st *resourceState, from CacheState) {
	if to := st.cacheState(); c.sink != nil && to != from {
		c.sink.Resources[st.typ][from]--
		c.sink.Resources[st.typ][to]++
	}
}

// Retire takes the client's gauges out of its MetricsSink, leaving its
// counts in, and stops it recording: the client is going away (its
// process stops). It is the last call to the client.
func (c *Client) Retire() {
	if c.sink == nil {
		return
	}
	for i := range c.servers {
		if ch := c.servers[i].ch; ch != nil && ch.recorded {
			ch.recorded = false
			c.sink.server(ch.idx).Connected--
		}
	}
	for i := range c.auths {
		for _, e := range c.auths[i].entries {
			c.sink.Resources[e.st.typ][e.st.cacheState()]--
		}
	}
	c.sink = nil
}
