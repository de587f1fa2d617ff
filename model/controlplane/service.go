package controlplane

import (
	"fmt"
	"slices"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Service is the high-level description of one service a management server
// publishes. The server expands it into its resources (see [ExpandAll]):
// an LDS Listener (an API listener whose HttpConnectionManager names the
// RouteConfiguration over RDS, or inlines it), an RDS RouteConfiguration
// whose routes send RPCs to the service's clusters, and per cluster an
// EDS-type CDS Cluster and the EDS ClusterLoadAssignment of its endpoints.
// A service has one cluster (ClusterName, with Endpoints), or the
// Clusters it lists.
//
// The zero value of every optional field is the plain configuration a gRPC
// client accepts: round robin, no retries, no session affinity, one
// endpoint per entry of Endpoints.
type Service struct {
	// Name identifies the service on its server; it is also the default
	// listener name, which is the xds:/// target clients dial.
	Name string

	// ListenerName, RouteName, ClusterName and EDSName override the
	// resource names. The defaults are Name, Name+"-route",
	// Name+"-cluster" and the cluster name. ClusterName and EDSName are
	// unused when Clusters is set.
	ListenerName string
	RouteName    string
	ClusterName  string
	EDSName      string

	// InlineRoute puts the RouteConfiguration inside the listener's
	// HttpConnectionManager (route_config) instead of naming it over RDS;
	// the service then has no RDS resource.
	InlineRoute bool

	// Retry is the route's retry policy; nil means none.
	Retry *RetryPolicy

	// Session enables gRFC A55 stateful session affinity: the
	// envoy.filters.http.stateful_session filter with a cookie session
	// state. Nil means the filter is absent.
	Session *SessionAffinity

	// LB is the cluster's load-balancing policy.
	LB LBPolicy

	// OverrideHostStatus is the cluster's
	// common_lb_config.override_host_status (gRFC A55, "Load Balancer
	// Configuration Containing override_host_status"). Nil means the
	// default: UNKNOWN and HEALTHY, plus DRAINING when Session is set.
	OverrideHostStatus []corepb.HealthStatus

	// Endpoints are the service's backends, in order. When it is empty,
	// EndpointCount endpoints are generated (see [GeneratedAddress]).
	// Localities, when set, declares the localities the endpoints' Zone
	// and Priority name, with their weights; otherwise every (zone,
	// priority) an endpoint names is a locality weighted by the sum of its
	// endpoints' weights. All three are unused when Clusters is set.
	Endpoints     []Endpoint
	EndpointCount int
	Localities    []Locality
	// Port is the port of generated endpoints; 0 means 8080.
	Port uint32

	// Clusters, when set, are the service's clusters instead of the
	// single one above.
	Clusters []Cluster
	// Routes are the RouteConfiguration's routes, matched in order; empty
	// means one route, prefix "/", to every cluster (weighted when there
	// are several).
	Routes []Route
	// Withhold lists the types of the service's resources the server never
	// publishes (a cluster's own Withhold adds to it).
	Withhold TypeSet

	// Defect makes one of the service's resources invalid, so that a gRPC
	// client NACKs it (see [Defect]). The zero value is a valid service.
	// A Cluster or ClusterLoadAssignment defect breaks the cluster named
	// DefectCluster, "" meaning the first.
	Defect        Defect
	DefectCluster string

	// nextAddress is the lowest generated address index ReplaceEndpoints
	// has not handed out.
	nextAddress int
}

// RetryPolicy is a route retry policy (envoy RouteAction.retry_policy, as
// gRPC reads it: gRFC A44; GEP-3440 for the codes).
type RetryPolicy struct {
	// On lists the gRPC status codes that are retried, in retry_on
	// spelling ("unavailable", "cancelled", "deadline-exceeded",
	// "internal", "resource-exhausted"). Empty means "unavailable".
	On []string
	// NumRetries is the number of retries; 0 means 1.
	NumRetries uint32
	// BaseInterval and MaxInterval are retry_back_off; zero means 25 ms
	// and 10 × BaseInterval, Envoy's and gRPC's defaults.
	BaseInterval time.Duration
	MaxInterval  time.Duration
}

// SessionAffinity configures gRFC A55 cookie-based stateful session
// affinity.
type SessionAffinity struct {
	// CookieName is the cookie's name; it must not be empty.
	CookieName string
	// CookiePath is the cookie's path; empty means "/" to the client.
	CookiePath string
	// TTL is the cookie's time to live; 0 leaves it unset.
	TTL time.Duration
	// PerRoute puts the cookie configuration in the route's
	// typed_per_filter_config (a StatefulSessionPerRoute override, gRFC
	// A55 "Filter Config Overrides") and leaves an empty StatefulSession,
	// which does nothing on its own, in the HttpConnectionManager. When
	// false, the HttpConnectionManager's filter carries the configuration.
	PerRoute bool
	// Optional publishes the filter with is_optional (gRFC A39): a client
	// without the filter skips it instead of rejecting the Listener.
	// grpc-go and grpc-java have no stateful-session filter, so a
	// non-optional one makes them NACK every Listener of the service;
	// with Optional they accept it and have no affinity.
	Optional bool
}

// LBPolicy is a cluster's lb_policy.
type LBPolicy uint8

// Load-balancing policies gRPC supports (gRFC A42, A48).
const (
	RoundRobin   LBPolicy = iota // ROUND_ROBIN
	RingHash                     // RING_HASH with xx_hash
	LeastRequest                 // LEAST_REQUEST with choice_count 2
	PickFirst                    // load_balancing_policy with the pick_first extension (gRFC A62)
)

var lbNames = [...]string{"round_robin", "ring_hash", "least_request", "pick_first"}

// String names the policy as scenarios spell it: "round_robin",
// "ring_hash", "least_request" or "pick_first".
func (p LBPolicy) String() string {
	if int(p) < len(lbNames) {
		return lbNames[p]
	}
	return fmt.Sprintf("LBPolicy(%d)", p)
}

// ParseLBPolicy parses a policy name as [LBPolicy.String] spells it.
func ParseLBPolicy(s string) (LBPolicy, error) {
	for i, n := range lbNames {
		if n == s {
			return LBPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("controlplane: unknown LB policy %q (want one of %v)", s, lbNames[:])
}

// Endpoint is one backend of a service.
type Endpoint struct {
	// Address is an IP address; Port its port (0 means the service's).
	Address string
	Port    uint32
	// Weight is load_balancing_weight; 0 means 1.
	Weight uint32
	// Health is the EDS health_status; the zero value is UNKNOWN.
	Health corepb.HealthStatus
	// Zone names the endpoint's locality (region "region", this zone);
	// empty means "zone-a". Endpoints of one zone and priority share a
	// locality.
	Zone string
	// Priority is the EDS priority of the endpoint's locality (gRFC A27).
	Priority uint32
}

// defaultZone is the zone of an endpoint that names none.
const defaultZone = "zone-a"

// Defect is a deliberate error in one of a service's resources, chosen so
// that a gRPC client's validation rejects it (grpc-go
// xdsresource/unmarshal_*.go; model/xdsclient's rules). Publishing one
// models a bad config push that every client NACKs.
type Defect uint8

// Defects, each named after the resource it breaks.
const (
	// NoDefect publishes valid resources.
	NoDefect Defect = iota
	// DefectClusterLBPolicy gives the cluster lb_policy MAGLEV, which gRPC
	// does not support (xdsclient rule cds.lb_policy).
	DefectClusterLBPolicy
	// DefectEndpointZeroWeight gives the first endpoint
	// load_balancing_weight 0 (xdsclient rule eds.endpoint_zero_weight).
	DefectEndpointZeroWeight
	// DefectRouteRetry gives the route a retry policy whose retry_back_off
	// has no base_interval, which every implementation NACKs (grpc-go
	// generateRetryConfig, grpc-java parseRetryPolicy, C-core
	// RetryPolicyParse; num_retries 0 would not do: grpc-java accepts it;
	// xdsclient rule rds.retry_policy). With InlineRoute the listener
	// carries it and is NACKed.
	DefectRouteRetry
	// DefectListenerNoRouter leaves the HttpConnectionManager without any
	// HTTP filter (xdsclient rule lds.http_filters_empty).
	DefectListenerNoRouter
)

var defectNames = [...]string{"none", "cluster-lb-policy", "endpoint-zero-weight", "route-retry", "listener-no-router"}

// String names the defect as scenarios spell it.
func (d Defect) String() string {
	if int(d) < len(defectNames) {
		return defectNames[d]
	}
	return fmt.Sprintf("Defect(%d)", d)
}

// Type returns the type of the resource d breaks in a service whose route
// is inline (inline) or not.
func (d Defect) Type(inline bool) ResourceType {
	switch d {
	case DefectClusterLBPolicy:
		return CDS
	case DefectEndpointZeroWeight:
		return EDS
	case DefectRouteRetry:
		if !inline {
			return RDS
		}
	}
	return LDS
}

// ParseDefect parses a defect name as [Defect.String] spells it.
func ParseDefect(s string) (Defect, error) {
	for i, n := range defectNames {
		if n == s {
			return Defect(i), nil
		}
	}
	return 0, fmt.Errorf("controlplane: unknown defect %q (want one of %v)", s, defectNames[:])
}

// Resource names of s, with defaults applied.
func (s *Service) listenerName() string { return or(s.ListenerName, s.Name) }
func (s *Service) routeName() string    { return or(s.RouteName, s.Name+"-route") }
func (s *Service) clusterName() string  { return or(s.ClusterName, s.Name+"-cluster") }
func (s *Service) edsName() string      { return or(s.EDSName, s.clusterName()) }

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ResourceNames returns the names of the listener, the route and the
// first cluster's resources, indexed by resource type; the RDS name is
// empty when the route is inline. [Service.Resources] lists them all.
func (s *Service) ResourceNames() [NumTypes]string {
	var n [NumTypes]string
	n[LDS] = s.listenerName()
	if !s.InlineRoute {
		n[RDS] = s.routeName()
	}
	c := s.clusters()[0]
	n[CDS] = c.name
	n[EDS] = c.eds
	return n
}

// Listener is the name of the service's listener: the xds:/// target
// clients dial.
func (s *Service) Listener() string { return s.listenerName() }

// GeneratedAddress returns the address of the i-th generated endpoint
// (from 0): 10.a.b.c where a.b.c is i+1 in base 256. Addresses are unique
// within a service for i < 2^24-1.
func GeneratedAddress(i int) string {
	n := i + 1
	return fmt.Sprintf("10.%d.%d.%d", n>>16&0xff, n>>8&0xff, n&0xff)
}

// DefaultPort is the port of endpoints whose service sets none.
const DefaultPort = 8080

// endpoints returns s's endpoint list with generated endpoints filled in.
func (s *Service) endpoints() []Endpoint { return generated(s.Endpoints, s.EndpointCount) }

// generated returns eps, or count generated HEALTHY endpoints when eps is
// empty.
func generated(eps []Endpoint, count int) []Endpoint {
	if len(eps) > 0 || count == 0 {
		return eps
	}
	out := make([]Endpoint, count)
	for i := range out {
		out[i] = Endpoint{Address: GeneratedAddress(i), Health: corepb.HealthStatus_HEALTHY}
	}
	return out
}

// validate reports what is wrong with s as a sentence, or nil.
func (s *Service) validate() error {
	if s.Name == "" {
		return fmt.Errorf("controlplane: service has no name")
	}
	if s.Session != nil && s.Session.CookieName == "" {
		return fmt.Errorf("controlplane: service %q: session affinity needs a cookie name", s.Name)
	}
	if s.LB > LeastRequest {
		return fmt.Errorf("controlplane: service %q: unknown LB policy %d", s.Name, s.LB)
	}
	if int(s.Defect) >= len(defectNames) {
		return fmt.Errorf("controlplane: service %q: unknown defect %d", s.Name, s.Defect)
	}
	if s.EndpointCount < 0 {
		return fmt.Errorf("controlplane: service %q: endpoint count must be >= 0, got %d", s.Name, s.EndpointCount)
	}
	for _, c := range s.clusters() {
		seen := make(map[string]int, len(c.endpoints))
		for i, e := range c.endpoints {
			k := fmt.Sprintf("%s:%d", e.Address, s.port(e))
			if j, dup := seen[k]; dup {
				return fmt.Errorf("controlplane: service %q: endpoints %d and %d share the address %s", s.Name, j, i, k)
			}
			seen[k] = i
		}
	}
	return s.validateShape()
}

func (s *Service) port(e Endpoint) uint32 {
	switch {
	case e.Port != 0:
		return e.Port
	case s.Port != 0:
		return s.Port
	}
	return DefaultPort
}

// clone returns a deep copy of s, so that the server's copy never aliases
// the caller's slices.
func (s Service) clone() Service {
	if s.Retry != nil {
		r := *s.Retry
		r.On = append([]string(nil), r.On...)
		s.Retry = &r
	}
	if s.Session != nil {
		a := *s.Session
		s.Session = &a
	}
	s.OverrideHostStatus = slices.Clone(s.OverrideHostStatus) // keeps [] (nothing overrides) apart from nil (the default)
	s.Endpoints = append([]Endpoint(nil), s.Endpoints...)
	s.Localities = slices.Clone(s.Localities)
	s.Clusters = slices.Clone(s.Clusters)
	for i := range s.Clusters {
		c := &s.Clusters[i]
		c.Endpoints, c.Localities = slices.Clone(c.Endpoints), slices.Clone(c.Localities)
	}
	s.Routes = slices.Clone(s.Routes)
	for i := range s.Routes {
		s.Routes[i].Clusters = slices.Clone(s.Routes[i].Clusters)
	}
	return s
}
