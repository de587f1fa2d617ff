package tomlpos

import (
	"math/rand/v2"
	"testing"

	"github.com/BurntSushi/toml"
)

func FuzzLocate(f *testing.F) {
	for _, tt := range locateTests {
		f.Add(tt.doc)
	}
	for _, doc := range invalidDocs {
		f.Add(doc)
	}
	for _, doc := range crossCheckDocs {
		f.Add(doc)
	}
	f.Add(nearestDoc)
	r := rand.New(rand.NewPCG(3, 4))
	for range 10 {
		doc, _ := randomDoc(r)
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		x := Locate(doc)
		checkIndex(t, doc, x)
		x.Key(doc)
		x.Value(doc)
		x.Nearest(doc)
		var v any
		if md, err := toml.Decode(doc, &v); err == nil {
			crossCheck(t, "document", md, x)
		}
	})
}
