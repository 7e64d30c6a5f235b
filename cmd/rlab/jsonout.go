package main

import (
	"encoding/json"
	"io"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// writeJSON writes v as indented JSON (as json.Encoder with SetIndent) with
// the characters promise 37 keeps off the terminal (C1 controls, DEL, bidi
// controls) written as \u escapes, the same JSON value: -json output of
// commands that carry host text (facts, check, provision, run, pcap).
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(termsafe.JSON(b), '\n'))
	return err
}

// termsafeJSONWriter escapes each Write with termsafe.JSON: the writer
// must hand it whole JSON values or punctuation, never part of a string.
type termsafeJSONWriter struct{ w io.Writer }

func (t termsafeJSONWriter) Write(b []byte) (int, error) {
	if _, err := t.w.Write(termsafe.JSON(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
