// Package mesh reads a user's own mesh: the xDS resources a control plane
// serves, as one of the dumps users can take of them, and gRPC bootstrap
// files.
//
// A dump is one of:
//   - a CSDS ClientStatusResponse (envoy.service.status.v3), as
//     `grpcdebug ... xds config --json` prints it or any gRPC client's CSDS
//     service returns it: the resources of every generic_xds_configs entry
//     (and of the per-type xds_config dumps of older clients);
//   - an Envoy admin ConfigDump (envoy.admin.v3), as
//     `istioctl proxy-config all -o json` or Envoy's /config_dump print it:
//     the static and dynamic listeners, route configurations, active
//     clusters and endpoint configurations;
//   - plain resources: one Any ({"@type": "...Listener", ...}), a list of
//     them, or an object whose "resources" lists them (a
//     DiscoveryResponse).
//
// Each is JSON (protojson, with the envoy type registry) or the same
// document in YAML. Only Listeners, RouteConfigurations, Clusters and
// ClusterLoadAssignments are kept; everything else a dump holds is named
// in [Dump.Skipped].
package mesh
