package scenarios

import (
	"reflect"
	"time"

	"github.com/xdssim/xdssim/model/network"
)

// Channel is a gRPC channel's connection backoff (grpc
// doc/connection-backoff.md). Every key defaults to what the group's
// implementation ships (network.BackoffConfigOf), so that the resolved
// scenario shows each value a run uses.
type Channel struct {
	// BackoffSchedule is how a delay is measured: grpc-go (from the
	// failure, the first delay exactly initial_backoff), spec (from the
	// attempt's start, as the doc says), grpc-core and grpc-java (from
	// the attempt's start, every delay jittered).
	BackoffSchedule string `toml:"backoff_schedule"`
	// The delays: initial_backoff × multiplier^n, capped at max_backoff,
	// then jittered by ±jitter.
	InitialBackoff time.Duration `toml:"initial_backoff"`
	Multiplier     float64       `toml:"multiplier"`
	Jitter         float64       `toml:"jitter"`
	MaxBackoff     time.Duration `toml:"max_backoff"`
	// MinConnectTimeout is the least time a whole attempt is given (0s:
	// no such deadline, as in grpc-java); TCPConnectTimeout bounds the
	// TCP connect alone (0s: none; grpc-java's Netty default is 30 s).
	MinConnectTimeout time.Duration `toml:"min_connect_timeout"`
	TCPConnectTimeout time.Duration `toml:"tcp_connect_timeout"`
}

// Keepalive is a transport's keepalive: a ping after Time without a read,
// and the connection closed if nothing is read Timeout later (gRFC A8);
// a Time of 0s sends no pings. It defaults to what every implementation
// sets on its xDS channels: 5 min and 20 s (network.XDSKeepalive).
type Keepalive struct {
	Time    time.Duration `toml:"time"`
	Timeout time.Duration `toml:"timeout"`
}

// channelDefaults returns the connection backoff the named
// implementation's channels ship with.
func channelDefaults(impl string) Channel {
	b, ok := network.BackoffConfigOf(impl)
	if !ok {
		b = network.DefaultBackoffConfig() // an invalid profile: validation reports it
	}
	return Channel{
		BackoffSchedule:   b.Schedule.String(),
		InitialBackoff:    b.InitialBackoff,
		Multiplier:        b.Multiplier,
		Jitter:            b.Jitter,
		MaxBackoff:        b.MaxBackoff,
		MinConnectTimeout: b.MinConnectTimeout,
		TCPConnectTimeout: b.TCPConnectTimeout,
	}
}

// xdsKeepaliveDefaults is the keepalive of every implementation's xDS
// channels.
func xdsKeepaliveDefaults() Keepalive {
	ka := network.XDSKeepalive()
	return Keepalive{Time: ka.Time, Timeout: ka.Timeout}
}

// resolveGiven fills every key of the table *v at path that the scenario
// does not give from the same key of def.
func resolveGiven[T any](p *problems, path string, v *T, def T) {
	tv, dv := reflect.ValueOf(v).Elem(), reflect.ValueOf(def)
	fs := schemaFields(tv.Type())
	for _, k := range fs.names {
		if !p.given(joinPath(path, k)) {
			tv.Field(fs.byName[k]).Set(dv.Field(fs.byName[k]))
		}
	}
}

// keepalive checks the keepalive at path.
func (c *checker) keepalive(path string, ka Keepalive) {
	c.check(ka.Time >= 0, path+".time", "expected a duration >= 0 (0s: no keepalive), found %s", ka.Time)
	c.check(ka.Timeout > 0 || ka.Time == 0, path+".timeout", "expected a duration > 0 with a keepalive time set, found %s", ka.Timeout)
}

// channel checks the channel at path.
func (c *checker) channel(path string, ch Channel) {
	_, ok := network.ParseBackoffSchedule(ch.BackoffSchedule)
	c.check(ok, path+".backoff_schedule", "expected one of: grpc-go, grpc-java, grpc-core, spec, found %q", ch.BackoffSchedule)
	c.check(ch.InitialBackoff > 0, path+".initial_backoff", "expected a duration > 0, found %s", ch.InitialBackoff)
	c.check(ch.Multiplier >= 1, path+".multiplier", "expected a number >= 1, found %v", ch.Multiplier)
	c.check(ch.Jitter >= 0 && ch.Jitter < 1, path+".jitter", "expected a number in [0, 1), found %v", ch.Jitter)
	c.check(ch.MaxBackoff >= ch.InitialBackoff, path+".max_backoff", "expected at least initial_backoff (%s), found %s", ch.InitialBackoff, ch.MaxBackoff)
	c.check(ch.MinConnectTimeout >= 0, path+".min_connect_timeout", "expected a duration >= 0 (0s: no deadline over the whole attempt), found %s", ch.MinConnectTimeout)
	c.check(ch.TCPConnectTimeout >= 0, path+".tcp_connect_timeout", "expected a duration >= 0 (0s: no bound on the TCP connect), found %s", ch.TCPConnectTimeout)
	c.check(ch.MinConnectTimeout != 0 || ch.TCPConnectTimeout != 0, path+".min_connect_timeout", "min_connect_timeout and tcp_connect_timeout are both 0s: something must end an attempt that never connects")
}

// backoff converts a valid channel.
func (ch Channel) backoff() network.BackoffConfig {
	s, _ := network.ParseBackoffSchedule(ch.BackoffSchedule)
	return network.BackoffConfig{InitialBackoff: ch.InitialBackoff, Multiplier: ch.Multiplier, Jitter: ch.Jitter,
		MaxBackoff: ch.MaxBackoff, MinConnectTimeout: ch.MinConnectTimeout, TCPConnectTimeout: ch.TCPConnectTimeout, Schedule: s}
}

// network converts a valid keepalive.
func (ka Keepalive) network() network.Keepalive {
	return network.Keepalive{Time: ka.Time, Timeout: ka.Timeout}
}
