package proto

// The bundle: many small files in one stream, so a pull of 1,000 logs costs
// one round trip instead of 1,000. It does not go over the protocol session
// (JSON would carry every byte as base64): the controller opens a second SSH
// session on the same connection running
//
//	<agent binary> bundle --work-dir <work dir>
//
// as the login user (never through sudo: the stream reads only what the user
// could read over SFTP, so a root agent's --owner refusals stay the only way
// to root), writes one BundleRequest as JSON on its stdin and closes it. The
// agent answers on stdout with a POSIX (PAX) tar stream holding, in request
// order, one regular-file entry per requested file, named by its Path, and
// then exits 0. Nothing else is ever in the stream: no directories, links or
// devices, and a reader refuses them.
//
// An entry carries at most the requested Size bytes: a file that grew after
// the listing is cut there, and its PAX record BundleSize says how long it
// really was, so the reader fails it instead of filling its disk. A file the
// agent could not send (gone, not a regular file, unreadable) is an entry of
// size 0 with a PAX record BundleError saying why.

// BundleCommand is the agent subcommand that writes a bundle.
const BundleCommand = "bundle"

// BundleRequest names the files to bundle, as files.list listed them.
type BundleRequest struct {
	Files []FileInfo `json:"files"`
	// HashOnly asks for no data: every entry has size 0 and carries the
	// sha256 of the file's first Size bytes in BundleSHA256 (and its real
	// size in BundleSize). The controller asks for it while it copies big
	// files listed without a sha256 (FilesListOptions.HashMax).
	HashOnly bool `json:"hash_only,omitempty"`
}

// FilesListOptions are files.list's params (FilesListParams) with what was
// added since. HashMax > 0 lists files bigger than that without their
// sha256, so a 1 GiB capture is not read through on the host before its
// pull can start; the pull gets the sum from the host while it copies
// (BundleRequest.HashOnly). 0 hashes every file, as before.
//
// A listing comes in pages: the files whose paths sort after After, at most
// FilesListPage of them (and fewer when their entries would fill the line),
// with More set when others follow; the caller asks again with After = the
// last path it got. An agent from before pages ignores After and sends
// everything without More (a work dir of 100k small files then overflows
// MaxLine and is refused).
type FilesListOptions struct {
	FilesListParams
	HashMax int64  `json:"hash_max,omitempty"`
	After   string `json:"after,omitempty"`
}

// FilesListPage is the most files one files.list answer holds.
const FilesListPage = 10000

// MaxBundleRequest bounds the request the agent reads from its stdin.
const MaxBundleRequest = 64 << 20

// PAX records of a bundle entry.
const (
	BundleSize   = "RLAB.size"   // decimal size of the file when the agent opened it
	BundleError  = "RLAB.error"  // why the file is not in the stream
	BundleSHA256 = "RLAB.sha256" // hash-only entries: sha256 (hex) of the file's first Size bytes
)
