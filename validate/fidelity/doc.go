// Package fidelity checks the simulator against the real grpc-go client.
//
// A case is an xdssim scenario (validate/cases/*.toml) with a few clients
// and at most a minute of timeline. The package runs it twice: in the
// simulator, with profile grpc-go, recording a trace; and for real, in
// real time on loopback: one grpc-go process per client (the xds resolver
// with its own bootstrap, reporting RPC outcomes and its CSDS resource
// states), go-control-plane's real ADS server serving the same cache the
// simulated server holds (model/controlplane Server.Cache), real gRPC
// backends, and a TCP proxy per server for the faults. Both runs become an
// [Observation]: per client, the requests each server received, the
// responses it sent, the resource timers that fired, the fallback
// switches, and the RPC failure windows, built by the simulator's own
// dataplane.Tracker from the RPC outcomes. [Compare] then checks that the
// request/ACK/NACK sequences match exactly and that every time agrees
// within a tolerance derived from the case (see [Tolerance]).
package fidelity
