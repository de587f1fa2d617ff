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
	for _, words := range []int{1, 3, 8, 9, 16, 159} {
		t.Run(fmt.Sprint(words, " words"), func(t *testing.T) {
			// The value is followed by a word that must not be read.
			buf := make([]uint64, words+1)
			for i := range buf {
				buf[i] = 1 << (i % 64)
				if i == words {
					buf[i] = 1 << 63 // past the value: never in the sum
				}
			}
			var want uint64
			for i := 0; i < words; i += LineSize / 8 {
				want += buf[i]
			}
			want += buf[words-1]
			got := of(buf[:words])
			if got != want {
				t.Errorf("read %#x, want %#x", got, want)
			}
		})
	}
}

// of calls Of on the words of b as one value of their size.
func of(b []uint64) uint64 {
	switch len(b) {
	case 1:
		return Of((*[1]uint64)(b))
	case 3:
		return Of((*[3]uint64)(b))
	case 8:
		return Of((*[8]uint64)(b))
	case 9:
		return Of((*[9]uint64)(b))
	case 16:
		return Of((*[16]uint64)(b))
	case 159:
		return Of((*[159]uint64)(b))
	}
	panic("no such size")
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
