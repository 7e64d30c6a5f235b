package lab

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MaxLiteralRun bounds the literal parts of one template that follow
// another literal part (a heredoc's lines, the pieces a quoted string's
// `$${` and `%%{` cut it into): a template reaching it is refused, so a
// single run of more than MaxLiteralRun parts is, and so are many shorter
// runs with interpolations between. hcl's parser melds each such part into
// the one before it, copying every part after it in the template, so n of
// them cost time quadratic in n: 100,000 (a 100 KB heredoc of empty lines) took
// 33 s in rlab fmt (attack round 16). They are counted per template, not
// per run: an interpolation between two runs does not end the cost, as
// every meld still copies the whole rest of the template (attack round 17:
// `${1}` every 999 lines of a 100 KB heredoc took 17 s in rlab fmt). At the
// bound, a lab of 4 MiB of such heredocs parses in seconds.
const MaxLiteralRun = 1000

// LiteralRunSummary is the summary of the diagnostic for a template past
// MaxLiteralRun.
const LiteralRunSummary = "Template too long"

// LongLiteralRun is the range of the literal part where a template's
// literal parts that follow a literal part reach MaxLiteralRun in src, or
// nil; it reads src's tokens only (linear time), and only within
// MaxTokens: past that, the range is the piece past the bound.
func LongLiteralRun(name string, src []byte) *hcl.Range {
	if i := tooManyTokens(src); i >= 0 {
		r := rangeAt(name, src, i)
		return &r
	}
	return lexHazards(name, src).literal
}

// hazards are what the token checks find in a file that hcl's parser must
// not be given, each the first of its kind (nil: none): a number literal
// longer than MaxNumberDigits (numbers.go), more than MaxNesting unary
// operators in a row, a template reaching MaxLiteralRun melds.
type hazards struct {
	number, unary, literal *hcl.Range
}

// lexHazards lexes src once for every token check; callers bound src by
// MaxTokens first (tooManyTokens), as lexing costs in proportion to it.
func lexHazards(name string, src []byte) hazards {
	var h hazards
	toks, _ := hclsyntax.LexConfig(src, name, hcl.InitialPos)
	// One frame a template open here (templates nest through their
	// interpolations): its melds so far, and whether its last part was
	// a literal.
	type frame struct {
		melds   int
		literal bool
	}
	var open []frame
	unary := 0
	for _, t := range toks {
		switch t.Type {
		case hclsyntax.TokenBang, hclsyntax.TokenMinus:
			// hcl's parser recurses once per unary operator; lines
			// between them do not end the chain.
			if unary++; unary > MaxNesting && h.unary == nil {
				h.unary = t.Range.Ptr()
			}
		case hclsyntax.TokenNewline:
		default:
			unary = 0
		}
		if t.Type == hclsyntax.TokenNumberLit && h.number == nil && longDigits(string(t.Bytes)) {
			h.number = t.Range.Ptr()
		}
		switch t.Type {
		case hclsyntax.TokenOQuote, hclsyntax.TokenOHeredoc:
			open = append(open, frame{})
			continue
		case hclsyntax.TokenCQuote, hclsyntax.TokenCHeredoc:
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
			continue
		}
		if len(open) == 0 || h.literal != nil {
			continue
		}
		top := &open[len(open)-1]
		if t.Type != hclsyntax.TokenStringLit && t.Type != hclsyntax.TokenQuotedLit {
			top.literal = false
			continue
		}
		if top.literal {
			if top.melds++; top.melds >= MaxLiteralRun {
				h.literal = t.Range.Ptr()
			}
		}
		top.literal = true
	}
	return h
}

// UnarySummary is the summary of the diagnostic for a chain of unary
// operators past MaxNesting.
const UnarySummary = "Operators too deep"

// longUnaryChain is the range of the unary operator (`!`, `-`) where more
// than MaxNesting of them stand in a row in src, or nil; it reads src's
// tokens only. hcl's parser recurses once per such operator, and tooDeep
// counts only brackets: 250 KB of `!` took rlab validate, fmt and report to
// Go's 1 GB stack limit, a fatal error no recover catches (attack round
// 17, labs). Lines between them do not end the chain.
func longUnaryChain(name string, src []byte) *hcl.Range {
	if tooManyTokens(src) >= 0 {
		return nil // refused as too long before this matters
	}
	return lexHazards(name, src).unary
}

// Unparsable says whether rlab refuses to hand src to hcl's parser at all:
// too large, nested too deep, too many pieces, a number, template or
// operator chain hcl takes quadratic time or unbounded stack in. Load
// gives each its own diagnostic; the callers that parse a file outside
// Load (a folder's split, rlab report's lab-name lookup) ask this, so they
// hold the same bounds.
func Unparsable(name string, src []byte) bool {
	if len(src) > MaxFileBytes || tooDeep(src) >= 0 || tooManyTokens(src) >= 0 {
		return true
	}
	h := lexHazards(name, src)
	return h.number != nil || h.unary != nil || h.literal != nil
}
