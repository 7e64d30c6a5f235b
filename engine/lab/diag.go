package lab

import (
	"encoding/json"
	"os"

	"github.com/hashicorp/hcl/v2"
)

// SourceFiles returns the sources diagnostics point into, in the form
// hcl.NewDiagnosticTextWriter wants: the loaded files when l is not nil,
// else the files named by the diagnostics (read again, within MaxFileBytes).
func SourceFiles(l *Lab, diags hcl.Diagnostics) map[string]*hcl.File {
	out := map[string]*hcl.File{}
	if l != nil {
		for n, b := range l.Files {
			out[n] = &hcl.File{Bytes: b}
		}
	}
	for _, d := range diags {
		if d.Subject == nil || out[d.Subject.Filename] != nil {
			continue
		}
		st, err := os.Stat(d.Subject.Filename)
		if err != nil || !st.Mode().IsRegular() || st.Size() > MaxFileBytes {
			continue
		}
		if b, err := os.ReadFile(d.Subject.Filename); err == nil {
			out[d.Subject.Filename] = &hcl.File{Bytes: b}
		}
	}
	return out
}

// JSONPos is a position in a diagnostic's JSON form.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSONRange is a source range in a diagnostic's JSON form.
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONDiagnostic is the JSON form of one diagnostic, as `rlab validate -json`
// prints it.
type JSONDiagnostic struct {
	Severity string     `json:"severity"` // "error" or "warning"
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail"`
	Range    *JSONRange `json:"range,omitempty"`
}

// JSONResult is the whole output of `rlab validate -json`.
type JSONResult struct {
	Valid        bool             `json:"valid"`
	ErrorCount   int              `json:"error_count"`
	WarningCount int              `json:"warning_count"`
	Diagnostics  []JSONDiagnostic `json:"diagnostics"`
}

// NewJSONResult converts diagnostics to their JSON form.
func NewJSONResult(diags hcl.Diagnostics) JSONResult {
	r := JSONResult{Diagnostics: []JSONDiagnostic{}}
	for _, d := range diags {
		jd := JSONDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
			r.WarningCount++
		} else {
			r.ErrorCount++
		}
		if s := d.Subject; s != nil {
			jd.Range = &JSONRange{
				Filename: s.Filename,
				Start:    JSONPos{s.Start.Line, s.Start.Column, s.Start.Byte},
				End:      JSONPos{s.End.Line, s.End.Column, s.End.Byte},
			}
		}
		r.Diagnostics = append(r.Diagnostics, jd)
	}
	r.Valid = r.ErrorCount == 0
	return r
}

// MarshalJSONResult renders diagnostics as indented JSON.
func MarshalJSONResult(diags hcl.Diagnostics) ([]byte, error) {
	return json.MarshalIndent(NewJSONResult(diags), "", "  ")
}
