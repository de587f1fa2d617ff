package sim

import (
	"math/rand/v2"
	"time"
)

// A Rand is the random stream of one entity: a PCG generator seeded from
// the run seed and the entity's stable key (see [NewStream]). Each entity
// draws only from its own stream, so the draws one entity makes never
// depend on how many other entities exist or what they do.
//
// A Rand is not safe for concurrent use.
type Rand struct {
	pcg rand.PCG
	r   rand.Rand // draws from pcg
}

// NewStream returns the random stream of the entity named key in the run
// seeded with seed. The stream depends only on (seed, key): adding,
// removing or reordering other entities never perturbs it. Keys should be
// stable, human-meaningful names such as "client/17" or "server/primary".
//
// The PCG seed is derived by hashing key with 64-bit FNV-1a and mixing it
// with seed through the splitmix64 finalizer. This derivation is part of
// the determinism contract: changing it changes every run.
func NewStream(seed uint64, key string) *Rand {
	r := new(Rand)
	r.Init(seed, key)
	return r
}

// Init makes r, in place, the stream NewStream(seed, key) returns: a
// model that keeps many streams keeps them in its own arrays, beside
// what draws from them, rather than each in an allocation of its own. r
// refers to itself, so it must not be copied afterwards.
func (r *Rand) Init(seed uint64, key string) {
	k := fnv1a(key)
	s := mix64(seed ^ mix64(k+golden))
	r.pcg.Seed(mix64(s+golden), mix64(s+golden+golden))
	r.r = *rand.New(&r.pcg)
}

// Golden is 2^64 divided by the golden ratio, splitmix64's increment.
const Golden = 0x9e3779b97f4a7c15

const golden = Golden

// Mix64 is the splitmix64 finalizer: a bijection on uint64 that spreads
// every input bit over every output bit. Models use it with HashKey to make
// stable per-entity choices (which clients a fault selects) without a
// random stream.
func Mix64(z uint64) uint64 { return mix64(z) }

func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// HashKey returns the 64-bit FNV-1a hash of an entity key, the hash
// NewStream derives streams from.
func HashKey(key string) uint64 { return fnv1a(key) }

func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Reseed makes r the stream seeded with seed (mixed as NewStream mixes
// its key). A model that draws a varying number of values for a rare
// event draws them from a scratch stream reseeded from that event's
// identity (its entity, its time), leaving its entity's own stream as it
// was: runs that differ only in that event stay paired draw for draw
// (common random numbers), and a run that never draws for it draws the
// same.
func (r *Rand) Reseed(seed uint64) {
	s := mix64(seed + golden)
	r.pcg.Seed(mix64(s+golden), mix64(s+golden+golden))
	if r.r == (rand.Rand{}) {
		r.r = *rand.New(&r.pcg)
	}
}

// Float64 returns a uniform float64 in [0, 1).
func (r *Rand) Float64() float64 { return r.r.Float64() }

// Uint64 returns a uniform uint64.
func (r *Rand) Uint64() uint64 { return r.pcg.Uint64() }

// IntN returns a uniform int in [0, n). It panics if n <= 0.
func (r *Rand) IntN(n int) int { return r.r.IntN(n) }

// Uniform returns a uniform float64 in [lo, hi).
func (r *Rand) Uniform(lo, hi float64) float64 { return lo + (hi-lo)*r.r.Float64() }

// Exp returns an exponentially distributed duration with the given mean,
// rounded to the nanosecond.
func (r *Rand) Exp(mean time.Duration) time.Duration {
	return DurationOf(r.r.ExpFloat64() * float64(mean))
}

// Jitter returns d scaled by a uniform factor in [1-j, 1+j], as gRPC's
// backoff jitter does: Jitter(time.Second, 0.2) lies in [0.8s, 1.2s].
// j must be in [0, 1].
func (r *Rand) Jitter(d time.Duration, j float64) time.Duration {
	return DurationOf(float64(d) * (1 + j*(2*r.r.Float64()-1)))
}

// Source returns the stream as a [rand.Source], for the distributions of
// gonum.org/v1/gonum/stat/distuv. Drawing from the source advances this
// stream.
func (r *Rand) Source() rand.Source { return &r.pcg }

// MaxDraw is the longest duration a random draw yields: about 36 years,
// far past the end of any run, and small enough that a model may add a
// few draws together (a round trip is two latencies) without overflowing
// a time.Duration.
const MaxDraw = time.Duration(1 << 60)

// DurationOf rounds x nanoseconds to a Duration, clamping it to
// [0, MaxDraw] so that a draw is never negative and never wraps.
func DurationOf(x float64) time.Duration {
	switch {
	case !(x > 0): // also NaN
		return 0
	case x >= float64(MaxDraw):
		return MaxDraw
	}
	return time.Duration(x + 0.5)
}
