package lab

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MaxLiteralRun bounds the literal parts one after another in a template
// (a heredoc's lines, the pieces a quoted string's `$${` and `%%{` cut it
// into). hcl's parser melds them one at a time, copying every part after
// each, so a run of n costs time quadratic in n: 100,000 (a 100 KB
// heredoc of empty lines) took 33 s in rlab fmt (attack round 16). At the
// bound, a lab of 4 MiB of such heredocs parses in seconds.
const MaxLiteralRun = 1000

// LiteralRunSummary is the summary of the diagnostic for a template past
// MaxLiteralRun.
const LiteralRunSummary = "Template too long"

// LongLiteralRun is the range of the literal part where a run passes
// MaxLiteralRun in src, or nil; it reads src's tokens only (linear time).
// It lexes src only within MaxTokens: past that, the range is the piece
// past the bound (so the callers that parse a file outside Load, a
// folder's split and the report's lab-name lookup, hold that bound too).
func LongLiteralRun(name string, src []byte) *hcl.Range {
	if i := tooManyTokens(src); i >= 0 {
		r := rangeAt(name, src, i)
		return &r
	}
	toks, _ := hclsyntax.LexConfig(src, name, hcl.InitialPos)
	run := 0
	for _, t := range toks {
		if t.Type != hclsyntax.TokenStringLit && t.Type != hclsyntax.TokenQuotedLit {
			run = 0
			continue
		}
		if run++; run > MaxLiteralRun {
			r := t.Range
			return &r
		}
	}
	return nil
}
