// Package reporttmpl holds the html/template files of report.html, the run
// report, embedded so one rlab binary carries them. engine/report parses and
// executes them; nothing else should (internal/archtest checks it).
package reporttmpl

import "embed"

// FS holds report.html.tmpl and the templates it includes.
//
//go:embed *.tmpl
var FS embed.FS
