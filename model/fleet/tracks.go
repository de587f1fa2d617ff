package fleet

import (
	"fmt"
	"sort"
	"time"

	"github.com/xdssim/xdssim/model/dataplane"
)

// MaxTracks bounds Results.Tracks: a report draws one row per track.
const MaxTracks = 200

// maxTrackColumns bounds the columns of a track. A run with more samples
// than this folds several samples into one column.
const maxTrackColumns = 400

// TrackState is what a tracked XdsClient instance was doing in one column
// of time. A column that saw several states holds the greatest, so that a
// failure shows over everything else and a restart over fallback.
type TrackState uint8

// Track states. TrackFailing+Cause is an RPC failure window with that root
// cause ([FailingState]).
const (
	// TrackUp: the client was running, its XdsClient on its primary
	// server or on no server at all, and its RPCs did not fail.
	TrackUp TrackState = iota
	// TrackFallback: the XdsClient was on a fallback server (gRFC A71).
	TrackFallback
	// TrackNotRunning: the client had not started yet, or was down for a
	// restart.
	TrackNotRunning
	// TrackFailing is the first of the failing states.
	TrackFailing
)

// NumTrackStates bounds the TrackState values.
const NumTrackStates = TrackFailing + TrackState(dataplane.NumCauses)

// FailingState is the state of a column in a failure window with cause c.
func FailingState(c dataplane.Cause) TrackState { return TrackFailing + TrackState(c) }

// Cause returns the root cause of a failing state; ok is false for the
// other states.
func (s TrackState) Cause() (c dataplane.Cause, ok bool) {
	if s < TrackFailing || s >= NumTrackStates {
		return 0, false
	}
	return dataplane.Cause(s - TrackFailing), true
}

// String names the state: "up", "fallback", "not_running", or the name of
// the failure window's cause.
func (s TrackState) String() string {
	switch s {
	case TrackUp:
		return "up"
	case TrackFallback:
		return "fallback"
	case TrackNotRunning:
		return "not_running"
	}
	if c, ok := s.Cause(); ok {
		return c.String()
	}
	return fmt.Sprintf("TrackState(%d)", uint8(s))
}

// Track is one sampled instance's states over the run.
type Track struct {
	// Entity names the instance as failure windows do: "group/index/target".
	Entity string
	States []TrackState
}

// trackSet follows the tracked instances while the run goes on.
type trackSet struct {
	insts  []uint32 // ascending
	tracks []Track  // parallel to insts
	every  int      // samples per column
}

// buildTracks picks the instances to track: all of them when there are at
// most MaxTracks, otherwise MaxTracks spread evenly over instance order
// (which is group order, then client index, then target), so the choice
// depends only on the fleet's shape.
func (w *world) buildTracks() {
	n := len(w.insts)
	samples := int(w.cfg.Duration/w.cfg.SampleInterval) + 1
	w.tr.every = (samples + maxTrackColumns - 1) / maxTrackColumns
	cols := (samples + w.tr.every - 1) / w.tr.every
	k := min(n, MaxTracks)
	for i := 0; i < k; i++ {
		ii := uint32(i * n / k)
		inst := &w.insts[ii]
		g := &w.cfg.Groups[w.clients[inst.client].group]
		w.tr.insts = append(w.tr.insts, ii)
		w.tr.tracks = append(w.tr.tracks, Track{
			Entity: fmt.Sprintf("%s/%s", w.clientName(inst.client), g.Targets[inst.target]),
			States: make([]TrackState, 0, cols),
		})
	}
}

// sampleTracks records the state of every tracked instance at sample k.
func (w *world) sampleTracks(k int) {
	col := k / w.tr.every
	for i, ii := range w.tr.insts {
		inst := &w.insts[ii]
		s := TrackUp
		switch {
		case !w.clients[inst.client].up:
			s = TrackNotRunning
		case inst.fallback:
			s = TrackFallback
		}
		tr := &w.tr.tracks[i]
		if col == len(tr.States) {
			tr.States = append(tr.States, s)
		} else {
			tr.States[col] = max(tr.States[col], s)
		}
	}
}

// trackWindows marks the columns each failure window of a tracked instance
// covers, mapping a window to samples as the clients_failing series does.
func (w *world) trackWindows() {
	iv := int64(w.cfg.SampleInterval)
	at := func(t int64) int { return int((t + iv - 1) / iv) }
	for i := range w.dp.windows {
		r := &w.dp.windows[i]
		j := sort.Search(len(w.tr.insts), func(j int) bool { return w.tr.insts[j] >= r.inst })
		if j == len(w.tr.insts) || w.tr.insts[j] != r.inst {
			continue
		}
		tr := &w.tr.tracks[j]
		s := FailingState(r.w.Cause())
		last := min(at(int64(r.w.End))/w.tr.every, len(tr.States)-1)
		for c := at(int64(r.w.Start)) / w.tr.every; c <= last; c++ {
			tr.States[c] = max(tr.States[c], s)
		}
	}
}

// trackInterval is the virtual time one column of a track covers.
func (w *world) trackInterval() time.Duration {
	return time.Duration(w.tr.every) * w.cfg.SampleInterval
}
