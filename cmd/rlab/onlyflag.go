package main

import (
	"strings"

	"github.com/spf13/pflag"
)

// onlyValue is the --only flag: repeatable, comma-separated, where a comma
// inside an instance address's brackets (write_bw["a,b"]) or quotes does
// not split. pflag's StringSlice reads its value as CSV and rejects the
// quotes of write_bw["ana"], the form rlab prints instances in.
type onlyValue struct{ dst *[]string }

func (o onlyValue) String() string { return strings.Join(*o.dst, ",") }
func (o onlyValue) Type() string   { return "strings" }

func (o onlyValue) Set(s string) error {
	*o.dst = append(*o.dst, splitOnly(s)...)
	return nil
}

// splitOnly splits s at commas outside brackets and double quotes and drops
// empty parts.
func splitOnly(s string) []string {
	var (
		out   []string
		depth int
		quote bool
		start int
	)
	add := func(p string) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote && c == '\\':
			i++ // an escaped character inside quotes
		case c == '"':
			quote = !quote
		case quote:
		case c == '[':
			depth++
		case c == ']' && depth > 0:
			depth--
		case c == ',' && depth == 0:
			add(s[start:i])
			start = i + 1
		}
	}
	add(s[start:])
	return out
}

func onlyFlag(fl *pflag.FlagSet, dst *[]string, usage string) {
	fl.Var(onlyValue{dst}, "only", usage)
}
