// Package dataplane models what a gRPC client does with the configuration
// its XdsClient delivers: the channel to an xds:/// target, its load
// balancing over the endpoints it knows, the RPCs it sends, their retries
// (gRFC A6 and A44, GEP-3440) and stateful session affinity (gRFC A55),
// and the backends those RPCs reach, whose state is ground truth that the
// control plane may not have caught up with.
//
// Like model/xdsclient it is pure: no clock, no events. The caller (the
// fleet) passes the virtual time in, schedules what the results ask for,
// and records failures in a [Tracker] of failure windows, each labelled
// with a [Cause] taken from ground truth.
package dataplane
