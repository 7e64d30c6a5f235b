package lab

import "fmt"

// MaxTokens bounds the pieces of one lab (or HCL -var-file) file: words
// (runs of ASCII letters, digits and _), other characters, and line ends;
// blanks do not count. It bounds hcl's tokens: a word is at most two of
// them (1e5e5 is a number and a name), every other token at least one
// piece. Every parse lexes the whole file first, and hcl's lexer keeps
// about 100 bytes for each token, with the parser's and hclwrite's work
// after it in proportion, so a 4 MiB file of empty lines (4 million
// tokens) took rlab fmt 15 s and 1.9 GB (attack round 16). At the bound,
// the costliest file found (62,000 one-line attributes, 250 KB) formats
// in 4.3 s and 210 MB and validates in 2.3 s and 165 MB on two busy cores;
// 10,000 hosts written out, a block each, are 180,000 pieces, and the
// labs of this repository at most 1,177.
const MaxTokens = 250_000

// TokensSummary is the summary of the diagnostic for a file past
// MaxTokens.
const TokensSummary = "Lab file too long"

// tokensDetail is that diagnostic's detail; what names the file.
func tokensDetail(what string) string {
	return fmt.Sprintf("A lab file may have at most %d pieces (words, numbers, symbols and line ends; blanks do not count), and %s has more by here: reading one costs time and memory in proportion to them. Split the lab into files of a folder, or read bulk data with file() and jsondecode().", MaxTokens, what)
}

// tooManyTokens is the offset in src of the piece past MaxTokens, or -1.
// One pass over the bytes, before anything lexes them.
func tooManyTokens(src []byte) int {
	_, at := scanTokens(src, MaxTokens)
	return at
}

// countTokens is the number of pieces of src, as tooManyTokens counts them.
func countTokens(src []byte) int {
	n, _ := scanTokens(src, len(src))
	return n
}

// scanTokens counts src's pieces up to limit: n of them, and the offset
// of the one past limit (-1 if none).
func scanTokens(src []byte, limit int) (n, at int) {
	word := false
	for i, c := range src {
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c >= 0x80 && c < 0xC0: // blanks; a UTF-8 character counts at its first byte
			word = false
			continue
		case c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if word {
				continue
			}
			word = true
		default:
			word = false
		}
		if n++; n > limit {
			return n, i
		}
	}
	return n, -1
}
