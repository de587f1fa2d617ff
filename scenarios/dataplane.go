package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
)

// RPC is the RPC load each client of a group sends to each of its targets.
type RPC struct {
	// Rate is RPCs per second per client and target; 0 sends none.
	Rate float64 `toml:"rate"`
	// Arrival is poisson or constant.
	Arrival string `toml:"arrival"`
	// Start is when a client's first RPC goes: immediate (as it starts)
	// or random (at a random phase of the arrivals).
	Start string `toml:"start"`
	// Deadline is each RPC's deadline; 0s means none.
	Deadline time.Duration `toml:"deadline"`
	// Method is the method path, matched against a session cookie's path.
	Method string `toml:"method"`
	// Methods, when given, are the RPC mix, replacing Method: each RPC
	// takes one, drawn by weight, with its headers.
	Methods []Method `toml:"methods,omitempty"`
	// Sessions is how many gRFC A55 sessions a client keeps per target.
	Sessions int `toml:"sessions"`
	// SessionRPCs and SessionLifetime end a session (0: no limit).
	SessionRPCs     int           `toml:"session_rpcs"`
	SessionLifetime time.Duration `toml:"session_lifetime"`
	// ThrottleMaxTokens and ThrottleTokenRatio are the service config's
	// retryThrottling (gRFC A6); 0 tokens: no throttling.
	ThrottleMaxTokens  int     `toml:"throttle_max_tokens"`
	ThrottleTokenRatio float64 `toml:"throttle_token_ratio"`
}

// DataPlane is how backends behave by default and how failures are
// counted.
type DataPlane struct {
	// WindowGap merges a client's failures less than this apart into one
	// failure window.
	WindowGap time.Duration `toml:"window_gap"`
	// ServiceTime is how long a backend takes to answer an RPC.
	ServiceTime Dist `toml:"service_time"`
	// ErrorRate is the share of RPCs a backend answers with ErrorCode.
	ErrorRate float64 `toml:"error_rate"`
	ErrorCode string  `toml:"error_code"`
}

// Backend changes some backends' ground truth over a span of time.
type Backend struct {
	At       time.Duration `toml:"at"`
	Duration time.Duration `toml:"duration"`
	// Action is down, drain, slow or fail.
	Action string `toml:"action"`
	// Service, First and Count say which backends: the service's
	// endpoints with generated addresses First .. First+Count-1.
	Service string `toml:"service"`
	// Cluster is the service's cluster whose backends these are; "" means
	// its first.
	Cluster string `toml:"cluster,omitempty"`
	First   int    `toml:"first"`
	Count   int    `toml:"count"`
	// Address and Locality choose the backends of a user's own
	// resources instead: every endpoint with this address ("ip" or
	// "ip:port"), or every endpoint of this locality ("zone" or
	// "region/zone"), in every ClusterLoadAssignment served.
	Address  string `toml:"address,omitempty"`
	Locality string `toml:"locality,omitempty"`
	// ServiceTime is slow's answer time.
	ServiceTime *Dist `toml:"service_time,omitempty"`
	// ErrorRate and ErrorCode are fail's errors.
	ErrorRate float64 `toml:"error_rate,omitzero"`
	ErrorCode string  `toml:"error_code,omitempty"`
}

// Retry is a route's retry policy (Envoy RouteAction.retry_policy as gRPC
// reads it, gRFC A44).
type Retry struct {
	// On are the retried codes, in retry_on spelling.
	On         []string      `toml:"on"`
	NumRetries int           `toml:"num_retries"`
	Base       time.Duration `toml:"base_interval"`
	Max        time.Duration `toml:"max_interval"`
}

// Session is a gRFC A55 stateful-session cookie.
type Session struct {
	Cookie   string        `toml:"cookie"`
	Path     string        `toml:"path"`
	TTL      time.Duration `toml:"ttl"`
	PerRoute bool          `toml:"per_route"`
	Optional bool          `toml:"optional"`
}

func (r *RPC) setDefaults() {
	r.Rate = 1
	r.Arrival = "poisson"
	r.Start = "immediate"
	r.Deadline = time.Second
	r.Method = "/xdssim.Echo/Call"
	r.ThrottleTokenRatio = 0.1
}

func (d *DataPlane) setDefaults() {
	d.WindowGap = 5 * time.Second
	d.ServiceTime = Dist{Dist: "constant", Value: 2 * time.Millisecond}
	d.ErrorCode = "unavailable"
}

func (b *Backend) setDefaults() {
	b.Count = 1
}

func (r *Retry) setDefaults() {
	r.On = []string{"unavailable"}
	r.NumRetries = 1
	r.Base = 25 * time.Millisecond
	r.Max = 250 * time.Millisecond
}

func (s *Session) setDefaults() {
	s.Cookie = "xdssim-session"
	s.Path = "/"
}

// resolveDataPlane drops what a distribution does not use.
func (s *Scenario) resolveDataPlane() {
	s.DataPlane.ServiceTime.normalize()
	for i := range s.Backends {
		if st := s.Backends[i].ServiceTime; st != nil {
			st.normalize()
		}
	}
}

// retryCodes are the codes GEP-3440 lets a route retry, as retry_on and
// scenarios spell them.
var retryCodes = map[string]codes.Code{
	"cancelled": codes.Canceled, "deadline-exceeded": codes.DeadlineExceeded, "internal": codes.Internal,
	"resource-exhausted": codes.ResourceExhausted, "unavailable": codes.Unavailable,
}

var backendActions = map[string]fleet.BackendAction{
	"down": fleet.BackendDown, "drain": fleet.BackendDrain, "slow": fleet.BackendSlow, "fail": fleet.BackendFail,
}

var overrideStatuses = map[string]corepb.HealthStatus{
	"UNKNOWN": corepb.HealthStatus_UNKNOWN, "HEALTHY": corepb.HealthStatus_HEALTHY, "DRAINING": corepb.HealthStatus_DRAINING,
}

// validateDataPlane checks [data_plane], the groups' rpc tables, the
// services' retry and session settings and the [[backend]] events.
func (s *Scenario) validateDataPlane(c *checker) {
	d := s.DataPlane
	c.check(d.WindowGap >= 0, "data_plane.window_gap", "expected a duration >= 0, found %s", d.WindowGap)
	c.dist("data_plane.service_time", d.ServiceTime, true)
	c.check(d.ErrorRate >= 0 && d.ErrorRate <= 1, "data_plane.error_rate", "expected a fraction in [0, 1], found %v", d.ErrorRate)
	_, ok := retryCodes[d.ErrorCode]
	c.check(ok, "data_plane.error_code", "%s, found %q", oneOf(retryCodes), d.ErrorCode)

	for i, g := range s.Fleet.Groups {
		p := fmt.Sprintf("fleet.group[%d].rpc", i)
		r := g.RPC
		c.check(r.Rate >= 0 && r.Rate <= 1e6, p+".rate", "expected RPCs per second from 0 to 1e6, found %v", r.Rate)
		c.check(r.Arrival == "poisson" || r.Arrival == "constant", p+".arrival", "expected poisson or constant, found %q", r.Arrival)
		c.check(r.Start == "immediate" || r.Start == "random", p+".start", "expected immediate or random, found %q", r.Start)
		c.check(r.Deadline >= 0, p+".deadline", "expected a duration >= 0 (0s: no deadline), found %s", r.Deadline)
		c.check(strings.HasPrefix(r.Method, "/"), p+".method", "expected a method path like \"/pkg.Service/Method\", found %q", r.Method)
		c.check(r.Sessions >= 0 && r.Sessions <= 1000, p+".sessions", "expected a number from 0 to 1000, found %d", r.Sessions)
		c.check(r.SessionRPCs >= 0 && r.SessionRPCs <= math.MaxUint32, p+".session_rpcs", "expected a number from 0 (no limit) to %d, found %d", uint32(math.MaxUint32), r.SessionRPCs)
		c.check(r.SessionLifetime >= 0, p+".session_lifetime", "expected a duration >= 0 (0s: no limit), found %s", r.SessionLifetime)
		// gRFC A6: maxTokens in (0, 1000], tokenRatio > 0.
		c.check(r.ThrottleMaxTokens >= 0 && r.ThrottleMaxTokens <= 1000, p+".throttle_max_tokens",
			"expected a number from 0 (no throttling) to 1000, found %d", r.ThrottleMaxTokens)
		c.check(r.ThrottleTokenRatio > 0, p+".throttle_token_ratio", "expected a number > 0, found %v", r.ThrottleTokenRatio)
	}

	for i, cp := range s.ControlPlanes {
		for j, svc := range cp.Services {
			q := fmt.Sprintf("control_plane[%d].service[%d]", i, j)
			if r := svc.Retry; r != nil {
				for k, code := range r.On {
					_, ok := retryCodes[code]
					c.check(ok, fmt.Sprintf("%s.retry.on[%d]", q, k), "%s, found %q", oneOf(retryCodes), code)
				}
				// grpc-go and C-core NACK a RetryPolicy with num_retries 0
				// (grpc-go unmarshal_rds.go "must be >= 1"); the server
				// used to publish 1 instead, silently.
				c.check(r.NumRetries >= 1 && r.NumRetries <= math.MaxUint32, q+".retry.num_retries",
					"expected a number from 1 to %d (a uint32 in the RetryPolicy), found %d: grpc-go and C-core clients NACK a route whose num_retries is 0 (grpc-java makes it one attempt). For no retries leave out retry; to publish such a route on purpose, use defect = \"route-retry\"",
					uint32(math.MaxUint32), r.NumRetries)
				c.check(r.Base > 0, q+".retry.base_interval", "expected a duration > 0, found %s", r.Base)
				c.check(r.Max >= r.Base, q+".retry.max_interval", "expected at least base_interval (%s), found %s", r.Base, r.Max)
			}
			if ss := svc.Session; ss != nil {
				c.check(ss.Cookie != "", q+".session.cookie", "expected a cookie name, found \"\"")
				c.check(ss.Path == "" || strings.HasPrefix(ss.Path, "/"), q+".session.path", "expected a path starting with \"/\", found %q", ss.Path)
				c.check(ss.TTL >= 0, q+".session.ttl", "expected a duration >= 0, found %s", ss.TTL)
			}
			for k, st := range svc.OverrideHostStatus {
				_, ok := overrideStatuses[st]
				c.check(ok, fmt.Sprintf("%s.override_host_status[%d]", q, k), "expected UNKNOWN, HEALTHY or DRAINING (gRFC A55), found %q", st)
			}
		}
	}

	for i, b := range s.Backends {
		p := fmt.Sprintf("backend[%d]", i)
		action, ok := backendActions[b.Action]
		c.check(ok, p+".action", "%s, found %q", oneOf(backendActions), b.Action)
		c.during(p+".at", b.At, s.Duration)
		c.check(b.Duration >= 0, p+".duration", "expected a duration >= 0 (0s: until the end of the run), found %s", b.Duration)
		if action == fleet.BackendDrain {
			c.check(b.Duration > 0, p+".duration", "drain needs the grace period: a duration > 0")
		}
		if b.Address != "" || b.Locality != "" {
			// validateMesh checks the backends of a user's own resources.
		} else if svc := s.serviceByName(b.Service); c.check(svc != nil, p+".service", "no control plane serves a service named %q", b.Service) && b.Cluster != "" {
			c.check(slices.Contains(svc.clusterNames(), b.Cluster), p+".cluster", "service %q has no cluster %q (clusters: %s)",
				b.Service, b.Cluster, strings.Join(svc.clusterNames(), ", "))
		}
		c.check(b.First >= 0, p+".first", "expected a number >= 0, found %d", b.First)
		c.check(b.Count >= 1 && b.Count <= 100_000, p+".count", "expected a number from 1 to 100000, found %d", b.Count)
		if action == fleet.BackendSlow {
			if c.check(b.ServiceTime != nil, p+".action", "slow needs the backends' service_time") {
				c.dist(p+".service_time", *b.ServiceTime, false)
			}
		} else {
			c.check(b.ServiceTime == nil, p+".service_time", "is only used by action = \"slow\"")
		}
		if action == fleet.BackendFail {
			c.check(b.ErrorRate > 0 && b.ErrorRate <= 1, p+".error_rate", "fail needs an error_rate in (0, 1], found %v", b.ErrorRate)
			if b.ErrorCode != "" {
				_, ok := retryCodes[b.ErrorCode]
				c.check(ok, p+".error_code", "%s, found %q", oneOf(retryCodes), b.ErrorCode)
			}
		} else {
			c.check(!c.given(p+".error_rate"), p+".error_rate", "is only used by action = \"fail\"")
			c.check(!c.given(p+".error_code"), p+".error_code", "is only used by action = \"fail\"")
		}
	}
}

// serviceByName returns the first declared service named name.
func (s *Scenario) serviceByName(name string) *Service {
	for i := range s.ControlPlanes {
		for j := range s.ControlPlanes[i].Services {
			if s.ControlPlanes[i].Services[j].Name == name {
				return &s.ControlPlanes[i].Services[j]
			}
		}
	}
	return nil
}

// controlPlaneService converts a service's data-plane settings.
func (svc *Service) controlPlaneService(out *controlplane.Service) {
	if r := svc.Retry; r != nil {
		out.Retry = &controlplane.RetryPolicy{On: slices.Clone(r.On), NumRetries: uint32(max(r.NumRetries, 0)),
			BaseInterval: r.Base, MaxInterval: r.Max}
	}
	if ss := svc.Session; ss != nil {
		out.Session = &controlplane.SessionAffinity{CookieName: ss.Cookie, CookiePath: ss.Path, TTL: ss.TTL, PerRoute: ss.PerRoute, Optional: ss.Optional}
	}
	if svc.OverrideHostStatus != nil {
		out.OverrideHostStatus = []corepb.HealthStatus{}
		for _, st := range svc.OverrideHostStatus {
			out.OverrideHostStatus = append(out.OverrideHostStatus, overrideStatuses[st])
		}
	}
}

// dataPlaneConfig converts the data-plane sections into cfg.
func (s *Scenario) dataPlaneConfig(cfg *fleet.Config) {
	d := s.DataPlane
	cfg.DataPlane = fleet.DataPlane{WindowGap: d.WindowGap, Backend: dataplane.Backend{
		ServiceTime: d.ServiceTime.sim(), ErrorRate: d.ErrorRate, ErrorCode: retryCodes[d.ErrorCode],
	}}
	for i, g := range s.Fleet.Groups {
		r := g.RPC
		fg := &cfg.Groups[i]
		fg.DataPlane = dataplane.ProfileByName(g.Profile)
		// A55 comes with the stateful-session filter, which a what-if may
		// give a profile through profile_fields.http_filters.
		fg.DataPlane.A55 = fg.Profile.FilterSet().StatefulSession()
		fg.RPC = fleet.RPCLoad{Rate: r.Rate, Constant: r.Arrival == "constant", RandomStart: r.Start == "random", Deadline: r.Deadline, Method: r.Method,
			Sessions: r.Sessions, SessionRPCs: uint32(max(r.SessionRPCs, 0)), SessionLifetime: r.SessionLifetime,
			ThrottleMaxTokens: r.ThrottleMaxTokens, ThrottleTokenRatio: r.ThrottleTokenRatio}
	}
	for _, b := range s.Backends {
		e := fleet.BackendEvent{At: b.At, Duration: b.Duration, Action: backendActions[b.Action],
			ErrorRate: b.ErrorRate, ErrorCode: codes.Unavailable}
		if b.ServiceTime != nil {
			e.ServiceTime = b.ServiceTime.sim()
		}
		if code, ok := retryCodes[b.ErrorCode]; ok {
			e.ErrorCode = code
		}
		last := b.First + b.Count - 1
		who := b.Service
		if b.Cluster != "" {
			who = b.Service + "/" + b.Cluster
		}
		e.Label = fmt.Sprintf("%s endpoint %d %s", who, b.First, b.Action)
		if b.Count > 1 {
			e.Label = fmt.Sprintf("%s endpoints %d-%d %s", who, b.First, last, b.Action)
		}
		if svc := s.serviceByName(b.Service); svc != nil {
			cluster := b.Cluster
			if cluster == "" {
				cluster = svc.clusterNames()[0]
			}
			e.Range = fleet.BackendRange{Cluster: cluster, First: b.First, Count: b.Count}
		}
		cfg.BackendEvents = append(cfg.BackendEvents, e)
	}
}
