// Package controlplane models xDS management servers: one [Server] per
// configured control plane, serving real envoy protos over SotW ADS from
// go-control-plane's real cache (pkg/cache/v3), with a capacity model and
// per-server metrics.
//
// # What a server holds
//
// A server's state of the world is a set of services ([Service]), each
// expanded ([ExpandAll]) into an LDS Listener (an API listener whose
// HttpConnectionManager names its route over RDS or inlines it, with the
// router filter and, for gRFC A55 session affinity, the
// envoy.filters.http.stateful_session filter with a cookie session state),
// an RDS RouteConfiguration (its routes, each a path prefix to one cluster
// or to weighted_clusters, with the retry policy and the per-route
// StatefulSessionPerRoute override when configured), and per cluster an
// EDS-type CDS Cluster with common_lb_config.override_host_status and the
// ClusterLoadAssignment of its endpoints: localities with their weights
// and EDS priorities (gRFC A27), endpoints with their health status
// (DRAINING included) and weights. Every resource validates in
// model/xdsclient, except those a [Defect] breaks on purpose. A service
// may withhold some of its resources (never publish them, or stop
// publishing them: [Server.WithholdResources]). Each server has its own
// services, so a fallback server can serve an older config than the
// primary.
//
// The server marshals each resource once per version into one
// *anypb.Any, and every response carrying that version holds the same
// pointer: the wiring decodes a resource once per pointer
// (xdsclient.Decode) and shares the result among all the clients that
// receive it. Versions carry the server's name ("primary/7"), so versions
// of different servers never compare equal.
//
// # Driving a server
//
// A Server is a pure state machine in the manner of go.etcd.io/raft: no
// goroutines, no clock, no I/O. The wiring (model/fleet) calls it from
// kernel events, passing the virtual time, and delivers what it returns:
//
//   - [Server.OpenStream] when a client's ADS stream reaches the server; a
//     *[StreamError] with RESOURCE_EXHAUSTED refuses it
//     ([Capacity].MaxStreams). [Server.CloseStream] when it ends.
//   - [Server.Receive] when a DiscoveryRequest arrives, as the [Request]
//     the server reads of it: the request joins the FIFO of the capacity
//     model. After it, and after every [Server.Complete], the wiring
//     calls [Server.NextCompletion], which hands out the [Job] to
//     complete next when the wiring has none due before it; at Job.Done
//     the wiring calls [Server.Complete](Job.ID), which returns the
//     [Response]s to send. [Server.Handle] processes a request at once,
//     bypassing the capacity model.
//   - The config-change methods ([Server.SetService],
//     [Server.DeleteService], [Server.WithholdResources],
//     [Server.PublishResources], [Server.SetResource],
//     [Server.DeleteResource], [Server.PublishInvalid],
//     [Server.ScaleEndpoints], [Server.DrainEndpoints],
//     [Server.SetEndpointHealth], [Server.SetResourceError],
//     [Server.ClearResourceError]) at scenario event times; each returns
//     the responses it pushes.
//   - [Server.Sample] at every sample interval, and [Server.Totals] at the
//     end (summary.json control_plane.<server>.*).
//
// Responses of one call are sorted by stream and then by type (LDS, RDS,
// CDS, EDS), and the resources inside a response by name.
//
// # SotW ADS semantics
//
// Per stream the server does what go-control-plane's sotw server does
// (pkg/server/sotw/v3 xds.go process and streamWrapper.send), minus its
// goroutines: one nonce counter per stream; a request whose response_nonce
// is not the last nonce sent for its type is ignored; otherwise the
// type's open watch is cancelled before its subscription changes
// (stream/v3 Subscription.SetResourceSubscription, legacy wildcard off as
// for gRPC clients) and a new watch is created, which the cache answers
// only when a subscribed resource is new or changed or the request has no
// version. The first request quoting a nonce is recorded as an ACK, or as
// a NACK when it carries error_detail ([Server.StreamState]). With
// [Config].ResourceErrors the server adds xRFC TP3 resource_errors:
// NOT_FOUND for subscribed names it does not have and the status set by
// SetResourceError, each sent once per stream until it changes; when the
// cache has nothing to send, an errors-only response carries them (with
// every subscribed resource for LDS and CDS, which are full state).
//
// What the server does with a NACK is its [NACKPolicy], the same with
// every cache: HoldNACKs (the default, what istiod does) sends nothing
// until the type's resources change; ResendNACKs answers at once with the
// same resources, the loop a raw SnapshotCache runs with a NACK carrying
// the previous version. The policy works by what the cache is asked
// (NACKPolicy.CacheVersion, CacheSubscription), so the same rule serves a
// real go-control-plane server (validate/).
//
// # Driving the real cache synchronously
//
// The caches answer by sending into the watch's channel, without select
// (LinearCache) or guarded only by a background context (SnapshotCache),
// so a full channel would block the simulation forever. Every open watch
// holds a slot in a buffered channel whose capacity is at least the number
// of open watches (the channels grow by generations), and after every call
// the server drains them all and sorts what came out by (stream, type)
// before assigning nonces: the caches range over maps, and nothing of that
// order reaches the simulation. The resources of a response are sorted by
// name. The caches' only clock read (SnapshotCache.CreateWatch records
// the time of the last request for StatusInfo) affects no response.
//
// # Which cache
//
// [LinearCaches], one LinearCache per type behind go-control-plane's
// MuxCache, is the default: a version per resource. [SnapshotCache] is
// one snapshot for the fleet made as cache.NewSnapshot makes it, with one
// version for every type, so that every change re-sends every type to
// every open watch and the clients ACK the unchanged types too;
// [SnapshotPerType] bumps the version of the changed types only. With a
// snapshot, Config.EmptyTypesUnanswered leaves a type without resources
// out of the snapshot, and go-control-plane then answers no request of
// it. docs/model-fidelity.md says which production control planes behave
// like which. Measured with BenchmarkEDSUpdateFanout and
// BenchmarkEDSUpdatePartialFanout (10 000 streams, each with an open LDS,
// RDS, CDS and EDS watch; 2-vCPU AMD EPYC, shared and noisy, three to four
// runs each; "snapshot" was the per-type snapshot):
//
//	one EDS update, all 10 000 streams subscribed:
//	  linear    4.3–6.5 µs/stream   10 allocs/stream    0.79 KB/stream
//	  snapshot  6.0–7.9 µs/stream   27 allocs/stream    1.33 KB/stream
//	one EDS update, 1 000 of 10 000 streams subscribed (ten services):
//	  linear    4.4–5.5 ms/update    1 000 responses
//	  snapshot   83–107 ms/update   10 000 responses
//	the 10 000 ACKs that re-arm the watches:
//	  linear    3.8–5.5 µs/stream;  snapshot 3.3–4.2 µs/stream
//
// A LinearCache notifies only the watches of the changed names and sends
// only the changed RDS/EDS resources; a SnapshotCache compares the
// version of every watch of the node (all types) and re-sends the whole
// subscribed set of each changed type to every watch of that type, so its
// cost grows with the fleet rather than with the subscribers, and clients
// re-validate unchanged resources. Both hold about 5 KB per stream with
// four open watches.
//
// # Capacity
//
// [Capacity] is a FIFO queue served by Workers identical workers, each
// request taking a ProcessingTime (the server's own code: gRPC and
// go-control-plane) plus a ServiceTime (what a control plane adds), both
// sim.Dist drawn from the server's own random stream. Requests arrive in time order and start in arrival order, so a
// request's start and completion are known when it arrives; a stream's
// responses leave in the order of its requests. A fleet reconnecting at
// once builds a queue: 1 000 requests on 4 workers at 10 ms each finish
// 2.5 s later. Pushes caused by config changes are sent when the change
// happens and take no worker time.
package controlplane
