package sim

import (
	"math"
	"slices"
	"testing"
	"time"
)

// draws returns the first n values of r.
func draws(r *Rand, n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

func TestNewStreamDependsOnlyOnSeedAndKey(t *testing.T) {
	base := draws(NewStream(42, "client/1"), 8)
	tests := []struct {
		name string
		seed uint64
		key  string
		same bool
	}{
		{"same seed and key", 42, "client/1", true},
		{"different key", 42, "client/2", false},
		{"different seed", 43, "client/1", false},
		{"key that differs in case", 42, "Client/1", false},
		{"seed and key swapped into each other", 1, "client/42", false},
		{"empty key", 42, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := draws(NewStream(tt.seed, tt.key), 8)
			if same := slices.Equal(got, base); same != tt.same {
				t.Errorf("NewStream(%d, %q) equal to NewStream(42, \"client/1\"): %v, want %v", tt.seed, tt.key, same, tt.same)
			}
		})
	}
}

func TestAddingAStreamDoesNotPerturbAnother(t *testing.T) {
	// Client 1's stream is the same whether or not client 2 exists and
	// whatever client 2 draws in between.
	alone := draws(NewStream(7, "client/1"), 100)

	c1, c2 := NewStream(7, "client/1"), NewStream(7, "client/2")
	var interleaved []uint64
	for range 100 {
		interleaved = append(interleaved, c1.Uint64())
		c2.Uint64()
		c2.Float64()
	}
	if !slices.Equal(interleaved, alone) {
		t.Error("client/1's stream changed when client/2 drew from its own")
	}
}

func TestNewStreamDerivationIsPinned(t *testing.T) {
	// The derivation of streams is part of the determinism contract: if
	// this test fails, every recorded run changes. Change the expected
	// values only on purpose.
	tests := []struct {
		seed uint64
		key  string
		want []uint64
	}{
		{1, "client/1", []uint64{0x5cc609a5242c7913, 0x7942956701a8d6c0, 0xf4828d93aeac3c4c}},
		{0, "", []uint64{0xe9ca631eedb1264c, 0x78498073281f17b9, 0xadb520b034834062}},
	}
	for _, tt := range tests {
		if got := draws(NewStream(tt.seed, tt.key), 3); !slices.Equal(got, tt.want) {
			t.Errorf("NewStream(%d, %q) draws %#x, want %#x", tt.seed, tt.key, got, tt.want)
		}
	}
}

func TestSourceAdvancesTheStream(t *testing.T) {
	a, b := NewStream(3, "x"), NewStream(3, "x")
	if a.Source().Uint64() != b.Uint64() {
		t.Error("Source() draws differ from the stream's own")
	}
	if a.Uint64() != b.Uint64() {
		t.Error("drawing from Source() did not advance the stream")
	}
}

func TestDrawsStayInRange(t *testing.T) {
	r := NewStream(1, "ranges")
	for range 10000 {
		if f := r.Float64(); f < 0 || f >= 1 {
			t.Fatalf("Float64() = %v, want [0, 1)", f)
		}
		if n := r.IntN(7); n < 0 || n >= 7 {
			t.Fatalf("IntN(7) = %d, want [0, 7)", n)
		}
		if u := r.Uniform(-2, 3); u < -2 || u >= 3 {
			t.Fatalf("Uniform(-2, 3) = %v, want [-2, 3)", u)
		}
		if e := r.Exp(time.Second); e < 0 {
			t.Fatalf("Exp(1s) = %v, want >= 0", e)
		}
	}
}

func TestJitterStaysWithinBounds(t *testing.T) {
	tests := []struct {
		d      time.Duration
		j      float64
		lo, hi time.Duration
	}{
		{time.Second, 0, time.Second, time.Second},
		{time.Second, 0.2, 800 * time.Millisecond, 1200 * time.Millisecond}, // gRPC backoff jitter
		{10 * time.Second, 0.5, 5 * time.Second, 15 * time.Second},
		{time.Second, 1, 0, 2 * time.Second},
		{0, 0.2, 0, 0},
	}
	for _, tt := range tests {
		r := NewStream(1, "jitter")
		var least, most time.Duration = 1<<63 - 1, -1
		for range 100_000 {
			got := r.Jitter(tt.d, tt.j)
			if got < tt.lo || got > tt.hi {
				t.Fatalf("Jitter(%v, %v) = %v, want in [%v, %v]", tt.d, tt.j, got, tt.lo, tt.hi)
			}
			least, most = min(least, got), max(most, got)
		}
		// The draws cover the range: both ends are approached within 0.1%.
		if slack := (tt.hi - tt.lo) / 1000; least > tt.lo+slack || most < tt.hi-slack {
			t.Errorf("Jitter(%v, %v) drew only [%v, %v] of [%v, %v]", tt.d, tt.j, least, most, tt.lo, tt.hi)
		}
	}
}

func TestDurationsAreClampedNotWrapped(t *testing.T) {
	tests := []struct {
		x    float64
		want time.Duration
	}{
		{0, 0},
		{0.4, 0},
		{0.5, 1},
		{1e9, time.Second},
		{-5, 0},
		{math.NaN(), 0},
		{math.Inf(1), MaxDraw},
		{1e300, MaxDraw},
	}
	for _, tt := range tests {
		if got := DurationOf(tt.x); got != tt.want {
			t.Errorf("DurationOf(%v) = %v, want %v", tt.x, got, tt.want)
		}
	}
}

// TestAStreamMadeInPlaceIsTheStreamNewStreamMakes: Init, which a model
// uses to keep streams in its own arrays, gives the stream NewStream
// gives, draw for draw, through both the generator and the source.
func TestAStreamMadeInPlaceIsTheStreamNewStreamMakes(t *testing.T) {
	for _, key := range []string{"client/go/0", "client/core/17", ""} {
		want := NewStream(42, key)
		var streams [2]Rand
		got := &streams[1]
		got.Init(42, key)
		for i := range 100 {
			if w, g := want.Float64(), got.Float64(); w != g {
				t.Fatalf("%q draw %d: Float64 %v, want %v", key, i, g, w)
			}
			if w, g := want.IntN(1000), got.IntN(1000); w != g {
				t.Fatalf("%q draw %d: IntN %v, want %v", key, i, g, w)
			}
			if w, g := want.Uint64(), got.Uint64(); w != g {
				t.Fatalf("%q draw %d: Uint64 %v, want %v", key, i, g, w)
			}
		}
	}
}
