package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a progress bar on stderr when stderr is a terminal and the
// run has taken over a second of wall time.
type progress struct {
	w       io.Writer
	enabled bool
	start   time.Time
	last    time.Time
	drawn   bool
}

func newProgress(w io.Writer, quiet bool) *progress {
	p := &progress{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok && !quiet {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.enabled = true
		}
	}
	return p
}

func (p *progress) update(now, end time.Duration) {
	if !p.enabled {
		return
	}
	t := time.Now()
	if t.Sub(p.start) < time.Second || t.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = t
	frac := 0.0
	if end > 0 {
		frac = float64(now) / float64(end)
	}
	const width = 30
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  %s of %s virtual", strings.Repeat("=", n), strings.Repeat(" ", width-n),
		frac*100, now.Round(time.Second), end)
	p.drawn = true
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
