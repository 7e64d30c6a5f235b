package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Every file operation the controller asks for goes through the work dir
// the agent opened at its start (workdir.go), an os.Root, so neither ".."
// nor a symlink can reach outside it, and swapping the work dir's path for
// a symlink afterwards reaches nothing either.

func (s *Server) filesList(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.FilesListOptions
	if err := decode(proto.MethodFilesList, params, &p); err != nil {
		return nil, err
	}
	dir := p.Dir
	if dir == "" {
		dir = "."
	}
	if !filepath.IsLocal(dir) {
		return nil, perr(proto.CodeBadRequest, "files.list: dir %q is not inside the work dir", p.Dir)
	}
	wd := s.workDir()
	if err := wd.check(proto.MethodFilesList); err != nil {
		return nil, err
	}
	var res any
	err := wd.asUser(proto.MethodFilesList, func() (err error) {
		res, err = filesListIn(ctx, wd, p, dir)
		return err
	})
	return res, asUserErr(proto.MethodFilesList, err)
}

// filesListIn is files.list's walk and hashing, run as the user (asUser).
func filesListIn(ctx context.Context, wd *workDir, p proto.FilesListOptions, dir string) (any, error) {
	root := wd.root
	if dir != "." {
		// Confirm the start is a real directory inside the root (not a
		// symlink out of it) before walking.
		fi, err := root.Lstat(dir)
		if err != nil {
			return nil, perr(proto.CodeNotFound, "files.list: %v", rootErr(err))
		}
		if !fi.IsDir() {
			return nil, perr(proto.CodeBadRequest, "files.list: %q is not a directory (symlinks are not followed)", p.Dir)
		}
	}
	res := proto.FilesList{Root: wd.path, Files: []proto.FileInfo{}}
	hashMax, after := p.HashMax, p.After
	// Names first (cheap), then the page is stat'ed and hashed: a work dir
	// of 100k small files is listed in pages, each well within MaxLine.
	type entry struct {
		path string
		d    fs.DirEntry
	}
	var all []entry
	err := fs.WalkDir(root.FS(), filepath.ToSlash(dir), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrPermission) && p != filepath.ToSlash(dir) {
			// A folder the user cannot read (a running capture's, root's)
			// is not theirs to list: passed over, as their own ls would
			// say it and go on.
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// WalkDir never follows symlinks; listing only regular files also
		// leaves out sockets, fifos and devices.
		if !d.Type().IsRegular() {
			return nil
		}
		if p = path.Clean(p); p > after {
			all = append(all, entry{p, d})
		}
		return nil
	})
	if err != nil {
		return nil, perr(proto.CodeInternal, "files.list %q: %v", p.Dir, rootErr(err))
	}
	sort.Slice(all, func(i, j int) bool { return all[i].path < all[j].path })
	budget := proto.MaxLine / 2 // the JSON of the entries, with room to spare
	for i, e := range all {
		if i == proto.FilesListPage || budget <= 0 {
			res.More = true
			break
		}
		var fi fs.FileInfo
		var sum string
		if info, err := e.d.Info(); err == nil && hashMax > 0 && info.Size() > hashMax {
			// Big: the pull asks for its sum while it copies.
			fi = info
		} else if fi, sum, err = hashRootFile(root, wd.owner, e.path); errors.Is(err, errNotUsers) || errors.Is(err, fs.ErrPermission) {
			continue // not the user's (usersFile), or not one they may read: a root agent lists it not
		} else if err != nil {
			return nil, perr(proto.CodeInternal, "files.list %q: %v", p.Dir, rootErr(err))
		}
		res.Files = append(res.Files, proto.FileInfo{
			Path:   e.path,
			Size:   fi.Size(),
			SHA256: sum,
			Mode:   uint32(fi.Mode().Perm()),
		})
		// An entry's JSON: its path escaped (at most 6 bytes a byte), the
		// sha256 and the field names.
		budget -= 6*len(e.path) + 160
	}
	return res, nil
}

// asUserErr is err of a call run as the user (asUser): the call's own
// error as it is, or an internal one when the agent could not take the
// user's filesystem identity.
func asUserErr(method string, err error) error {
	var pe *proto.Error
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return perr(proto.CodeInternal, "%s: %v", method, err)
}

func rootErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe
	}
	return err
}

// hashRootFile opens name inside root (refusing symlinks out of it) and
// returns its info and sha256.
func hashRootFile(root *os.Root, owner *Owner, name string) (fs.FileInfo, string, error) {
	// O_NONBLOCK: a FIFO swapped in since the walk must not hang the agent.
	f, err := root.OpenFile(filepath.FromSlash(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", &fs.PathError{Op: "open", Path: name, Err: errors.New("not a regular file")}
	}
	if err := usersFile(fi, owner, name); err != nil {
		return nil, "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, "", err
	}
	return fi, hex.EncodeToString(h.Sum(nil)), nil
}

// fileInfo describes one file of the work dir root for a result.
func fileInfo(root *os.Root, owner *Owner, rel string) (proto.FileInfo, error) {
	fi, sum, err := hashRootFile(root, owner, rel)
	if err != nil {
		return proto.FileInfo{}, err
	}
	return proto.FileInfo{Path: filepath.ToSlash(rel), Size: fi.Size(), SHA256: sum, Mode: uint32(fi.Mode().Perm())}, nil
}

func (s *Server) filesRead(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.FilesReadParams
	if err := decode(proto.MethodFilesRead, params, &p); err != nil {
		return nil, err
	}
	if p.Path == "" || !filepath.IsLocal(p.Path) {
		return nil, perr(proto.CodeBadRequest, "files.read: path %q is not inside the work dir", p.Path)
	}
	max := p.MaxBytes
	if max <= 0 || max > proto.OutputLimit {
		max = proto.OutputLimit
	}
	wd := s.workDir()
	if err := wd.check(proto.MethodFilesRead); err != nil {
		return nil, err
	}
	var res any
	err := wd.asUser(proto.MethodFilesRead, func() (err error) {
		res, err = filesReadIn(wd, p, max)
		return err
	})
	return res, asUserErr(proto.MethodFilesRead, err)
}

// filesReadIn is files.read's open and read, run as the user (asUser).
func filesReadIn(wd *workDir, p proto.FilesReadParams, max int64) (any, error) {
	f, err := wd.root.OpenFile(p.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, perr(proto.CodeNotFound, "files.read: %v", rootErr(err))
		}
		return nil, perr(proto.CodeBadRequest, "files.read: %v", rootErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, perr(proto.CodeInternal, "files.read %q: %v", p.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, perr(proto.CodeBadRequest, "files.read: %q is not a regular file", p.Path)
	}
	if err := usersFile(fi, wd.owner, p.Path); err != nil {
		return nil, perr(proto.CodePermission, "files.read: %v", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, perr(proto.CodeInternal, "files.read %q: %v", p.Path, err)
	}
	return proto.FileData{Path: filepath.ToSlash(p.Path), Size: fi.Size(), Data: data, Truncated: fi.Size() > int64(len(data))}, nil
}

// filesWrite writes one file of the work dir (files.write): a program's
// source the controller ships, in parts of at most FilesWriteLimit. The
// path is confined to the work dir (os.Root: no "..", no symlink out);
// folders on the way are made, given to the owner when the agent works for
// one, and the file is written as the owner's with the permission bits
// asked, at most 0755.
func (s *Server) filesWrite(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.FilesWriteParams
	if err := decode(proto.MethodFilesWrite, params, &p); err != nil {
		return nil, err
	}
	if p.Path == "" || !filepath.IsLocal(p.Path) {
		return nil, perr(proto.CodeBadRequest, "files.write: path %q is not inside the work dir", p.Path)
	}
	if len(p.Data) > proto.FilesWriteLimit {
		return nil, perr(proto.CodeBadRequest, "files.write %q: %d bytes in one call, more than %d: send it in parts (append)", p.Path, len(p.Data), proto.FilesWriteLimit)
	}
	wd := s.workDir()
	if err := wd.check(proto.MethodFilesWrite); err != nil {
		return nil, err
	}
	var res any
	err := wd.asUser(proto.MethodFilesWrite, func() (err error) {
		res, err = s.filesWriteIn(wd, p)
		return err
	})
	return res, asUserErr(proto.MethodFilesWrite, err)
}

// filesWriteIn is files.write's file work, run as the user (asUser): the
// folders and the file it makes are the user's as they are made, and
// what it opens the kernel lets the user open.
func (s *Server) filesWriteIn(wd *workDir, p proto.FilesWriteParams) (any, error) {
	rel := filepath.Clean(p.Path)
	if dir := filepath.Dir(rel); dir != "." {
		parts := strings.Split(dir, string(filepath.Separator))
		for i := range parts {
			d := filepath.Join(parts[:i+1]...)
			err := wd.root.Mkdir(d, 0o755)
			if err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, perr(proto.CodeInternal, "files.write %q: make folder %q: %v", p.Path, d, rootErr(err))
			}
			if err == nil && s.opts.Owner != nil && wd.as == nil {
				if err := wd.ownMadeDir(d, s.opts.Owner); err != nil {
					return nil, perr(proto.CodeInternal, "files.write %q: chown folder %q: %v", p.Path, d, rootErr(err))
				}
			}
		}
	}
	mode := fs.FileMode(p.Mode) & 0o755
	if mode == 0 {
		mode = 0o644
	}
	// The first part makes the file anew (never opening one the user put
	// there: a hard link to another's file, usersFile); later parts append
	// to a file that is the user's by then.
	var f *os.File
	var err error
	if p.Append {
		f, err = wd.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, mode)
	} else {
		f, err = wd.createNew(rel, mode)
	}
	if err != nil {
		return nil, perr(proto.CodeBadRequest, "files.write: %v", rootErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, perr(proto.CodeBadRequest, "files.write: %q is not a regular file", p.Path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); p.Append && s.opts.Owner != nil && (!ok || int(st.Uid) != s.opts.Owner.UID && !wd.agentMade(fi)) {
		// Appending to the user's file, or one this agent made (root's,
		// one name): not a root file the user renamed in between parts.
		return nil, perr(proto.CodePermission, "files.write: %v", usersFile(fi, s.opts.Owner, p.Path))
	}
	if s.opts.Owner != nil && wd.as == nil {
		if err := f.Chown(s.opts.Owner.UID, s.opts.Owner.GID); err != nil {
			return nil, perr(proto.CodeInternal, "files.write %q: chown: %v", p.Path, err)
		}
		wd.forget(f)
	}
	if !p.Append || p.Mode != 0 { // a later part keeps the first part's mode
		if err := f.Chmod(mode); err != nil {
			return nil, perr(proto.CodeInternal, "files.write %q: chmod: %v", p.Path, err)
		}
	}
	if _, err := f.Write(p.Data); err != nil {
		return nil, perr(proto.CodeInternal, "files.write %q: %v", p.Path, err)
	}
	if err := f.Close(); err != nil {
		return nil, perr(proto.CodeInternal, "files.write %q: %v", p.Path, err)
	}
	fi, err = wd.root.Stat(rel)
	if err != nil {
		return nil, perr(proto.CodeInternal, "files.write %q: %v", p.Path, rootErr(err))
	}
	return proto.FileWritten{Path: filepath.ToSlash(rel), Size: fi.Size()}, nil
}
