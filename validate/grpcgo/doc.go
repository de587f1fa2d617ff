// Package grpcgo runs real grpc-go xDS clients against a real go-control-plane
// management server on loopback, in real time, to validate the simulator
// against the implementation it models.
//
// The pieces are:
//
//   - Proxy, a loopback TCP proxy that can forward, refuse connections (as a
//     server that is down) or blackhole them (as a network dropping every
//     packet);
//   - ManagementServer, go-control-plane's state-of-the-world ADS server
//     behind a Proxy, recording every stream, request and response into a
//     Recorder;
//   - Backends, gRPC servers answering any method with an empty message;
//   - Client, a grpc-go xDS client in its own process, so that it has its own
//     XdsClient, sending RPCs at a fixed rate and reporting their outcomes,
//     its channel's connectivity states and its CSDS resource statuses as
//     ClientEvents.
//
// A program using StartClient must call MaybeRunClient first thing in main,
// or in TestMain for a test binary, since client processes are the program
// itself run again.
package grpcgo
