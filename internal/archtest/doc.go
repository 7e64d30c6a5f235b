// Package archtest holds rlab's import rules as data (Rules, in rules.go)
// and the test that checks them against `go list -deps`: which packages a
// package may import, which it must never reach however indirectly, and
// who may import it. A broken rule fails with the import chain that breaks
// it, such as engine/plan -> engine/provision -> agent/rpc.
//
// The table is the one source: a package doc says in a sentence what its
// package must not import and why, and names internal/archtest; a test
// fails when a doc makes such a promise without a rule here, when a ruled
// package's doc does not point here, or when a rule names a package that
// is gone (a rule left behind by a move would check nothing).
//
// It sits at the module root (internal/archtest), not under engine/, because its rules span
// agent/, engine/, steps and templates. It holds no code that rlab runs
// and must not be imported.
package archtest
