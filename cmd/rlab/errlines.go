package main

import (
	"fmt"
	"io"
	"strings"
)

// errorLines splits an error (errors.Join puts one error per line, a
// wrapped join breaks lines inside) into one line per error, without
// blank lines or repeats, made printable.
func errorLines(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(termText(strings.TrimRight(l, "\r")))
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return out
}

// printErrors prints err one error per line, each with prefix.
func printErrors(w io.Writer, prefix string, err error) {
	for _, l := range errorLines(err) {
		fmt.Fprintln(w, prefix+l)
	}
}
