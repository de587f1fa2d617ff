package scenarios

import "testing"

// TestRPCStartIsImmediateUnlessAskedForRandom checks rpc.start: its default
// (immediate: a client's first RPC goes as it starts, as real clients'
// first RPC starts their channel's resolution), both values as the fleet
// gets them, and a bad value refused at its position.
func TestRPCStartIsImmediateUnlessAskedForRandom(t *testing.T) {
	for _, tt := range []struct {
		name, rpc  string
		wantRandom bool
		wantErr    string
	}{
		{name: "left out", rpc: "rate = 2"},
		{name: "immediate", rpc: `start = "immediate"`},
		{name: "random", rpc: `start = "random"`, wantRandom: true},
		{name: "random at a constant rate", rpc: `start = "random", arrival = "constant"`, wantRandom: true},
		{name: "unknown", rpc: `start = "soon"`,
			wantErr: `s.toml:3:17: fleet.group[0].rpc.start: expected immediate or random, found "soon"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := "[[fleet.group]]\nclients = 1\nrpc = { " + tt.rpc + " }\n"
			if tt.wantErr != "" {
				wantErrors(t, doc, []string{tt.wantErr})
				return
			}
			s, err := parse(t, doc)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.FleetConfig().Groups[0].RPC.RandomStart; got != tt.wantRandom {
				t.Errorf("RandomStart = %v, want %v", got, tt.wantRandom)
			}
		})
	}
}
