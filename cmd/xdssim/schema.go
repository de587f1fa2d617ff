package main

import (
	"io"

	"github.com/xdssim/xdssim/scenarios"
)

var schemaCommand = command{
	name: "schema", summary: "print the JSON Schema of the scenario format, for editors",
	about: `Print the JSON Schema (draft 2020-12) of the scenario format: every key with
its type, range or set of values, default and description, built from the
schema the loader decodes with, so it cannot drift from it. Editors that
read JSON Schema for TOML use it to complete and check scenarios as you
type: with Taplo or the Even Better TOML extension, save it and put
"#:schema ./scenario.schema.json" at the top of a scenario
(docs/scenario-reference.md, "Editing scenarios").`,
	exec: func(_ flagValues, pos []string, stdout, _ io.Writer) error {
		if len(pos) > 0 {
			return badInput("schema: unexpected argument %q", pos[0])
		}
		b, err := scenarios.JSONSchema()
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	},
}
