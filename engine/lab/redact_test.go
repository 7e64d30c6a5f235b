package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/engine/termsafe"
)

// TestRedactorEncodings: a sensitive value is redacted as written in every
// encoding rlab's outputs use, not only as the literal (before, a value with
// < or & survived into outcomes.json, and one with " or \ into agent.log
// and plan.json).
func TestRedactorEncodings(t *testing.T) {
	const marker = "S3CRET"
	secrets := []string{
		marker + "-plain",
		marker + `-<a&b>`,
		marker + `-"quoted"\back`,
		marker + "-tab\tnl\nesc\x1b",
		marker + "-ünï\u2028",
	}
	r := Redactor(append([]string{"", marker + "-plain"}, secrets...)) // empty and repeated values are harmless
	jsonOf := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	slogOf := func(v any) string {
		var buf bytes.Buffer
		slog.New(slog.NewTextHandler(&buf, nil)).Info("msg", "v", v)
		return buf.String()
	}
	htmlOf := func(s string) string {
		var buf bytes.Buffer
		template.Must(template.New("").Parse(`<td title="{{.}}">{{.}}</td>`)).Execute(&buf, s)
		return buf.String()
	}
	for _, s := range secrets {
		arg := "--token=" + s
		tests := map[string]string{
			"text": "exec: " + arg + ": exit 3",
			"JSON": jsonOf(map[string]string{"error": arg}),
			"JSON no HTML escaping": func() string {
				var b bytes.Buffer
				e := json.NewEncoder(&b)
				e.SetEscapeHTML(false)
				e.Encode(arg)
				return b.String()
			}(),
			"Go-quoted argv":         fmt.Sprintf("exec %q", []string{"sh", arg}),
			"slog text":              slogOf(arg),
			"slog text of JSON":      slogOf(jsonOf([]string{arg})),
			"JSON of Go-quoted argv": jsonOf(fmt.Sprintf("%q", arg)),
			"JSON of JSON":           jsonOf(jsonOf(arg)),
			"HTML":                   htmlOf(arg),
			"terminal-escaped":       termsafe.Line(arg),
			"ASCII-quoted":           fmt.Sprintf("%+q", arg),
		}
		for name, text := range tests {
			if got := r.Replace(text); strings.Contains(got, marker) {
				t.Errorf("%q as %s: %q redacted to %q", s, name, text, got)
			} else if !strings.Contains(got, "(sensitive)") {
				t.Errorf("%q as %s: %q has no (sensitive) mark: %q", s, name, text, got)
			}
		}
	}
	if got := r.Replace("nothing to hide <&>"); got != "nothing to hide <&>" {
		t.Errorf("other text changed: %q", got)
	}
}

// BenchmarkRedactor: a class lab's 200 sensitive values, each in its 57
// encodings, over a 1 KiB log line that holds none.
func BenchmarkRedactor(b *testing.B) {
	var secrets []string
	for i := range 200 {
		secrets = append(secrets, fmt.Sprintf("student-%03d-token<&>\"x\\y", i))
	}
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			buildRedactor(secrets)
		}
	})
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			Redactor(secrets)
		}
	})
	r := Redactor(secrets)
	line := strings.Repeat("exec wl.student-042 on host h42: exit 0 ", 26)
	b.Run("replace 1KiB", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			r.Replace(line)
		}
	})
}
