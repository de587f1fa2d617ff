package prefetch

import (
	"fmt"
	"testing"
)

// TestOfReadsAWordOfEveryLineAndNothingPast: Of reads the first word of
// each 64-byte stretch of the value and its last word, whatever its size
// (one word, less than a line, a line and a word, many lines), and
// nothing beyond it, which the sum of words set to their index shows.
func TestOfReadsAWordOfEveryLineAndNothingPast(t *testing.T) {
	// Of of the words of b as one value of len(b) words.
	for _, tt := range []struct {
		words int
		of    func(b []uint64) uint64
	}{
		{1, func(b []uint64) uint64 { return Of((*[1]uint64)(b)) }},
		{3, func(b []uint64) uint64 { return Of((*[3]uint64)(b)) }},
		{8, func(b []uint64) uint64 { return Of((*[8]uint64)(b)) }},
		{9, func(b []uint64) uint64 { return Of((*[9]uint64)(b)) }},
		{16, func(b []uint64) uint64 { return Of((*[16]uint64)(b)) }},
		{159, func(b []uint64) uint64 { return Of((*[159]uint64)(b)) }},
	} {
		t.Run(fmt.Sprint(tt.words, " words"), func(t *testing.T) {
			// The value is followed by a word that must not be read.
			buf := make([]uint64, tt.words+1)
			for i := range buf {
				buf[i] = 1 << (i % 63)
			}
			buf[tt.words] = 1 << 63 // past the value: never in the sum
			var want uint64
			for i := 0; i < tt.words; i += LineSize / 8 {
				want += buf[i]
			}
			want += buf[tt.words-1]
			if got := tt.of(buf[:tt.words]); got != want {
				t.Errorf("read %#x, want %#x", got, want)
			}
		})
	}
}

// TestSliceReadsItsFirstLinesAndNothingPastItsLength: Slice reads a word
// of each line of a slice's elements, at most max lines from its start,
// and the last word read; none past its length (the capacity beyond it is
// marked), and nothing of a slice smaller than a word.
func TestSliceReadsItsFirstLinesAndNothingPastItsLength(t *testing.T) {
	for _, tt := range []struct{ words, max int }{{1, 4}, {7, 4}, {9, 4}, {40, 4}, {40, 1}, {0, 4}} {
		t.Run(fmt.Sprint(tt.words, " words, ", tt.max, " lines"), func(t *testing.T) {
			buf := make([]uint64, tt.words+1)
			for i := range buf {
				buf[i] = 1 << (i % 63)
			}
			buf[tt.words] = 1 << 63 // past the length: never read
			s := buf[:tt.words]
			n := min(tt.words, tt.max*LineSize/8)
			var want uint64
			for i := 0; i < n; i += LineSize / 8 {
				want += s[i]
			}
			if n > 0 {
				want += s[n-1]
			}
			if got := Slice(s, tt.max); got != want {
				t.Errorf("read %#x, want %#x", got, want)
			}
		})
	}
	if got := Slice([]uint16{1, 2, 3}, 4); got != 0 {
		t.Errorf("a 6-byte slice: read %#x, want nothing", got)
	}
}
