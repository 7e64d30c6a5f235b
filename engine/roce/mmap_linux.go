package roce

import (
	"os"
	"syscall"
)

// mapFile maps the size bytes of f read-only for a split scan to read in
// place (mappedBlocks); ok is false when it cannot, and the file is read.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), ok bool) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, false
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	_ = syscall.Madvise(data, syscall.MADV_SEQUENTIAL) // a hint for the readahead of a cold file
	return data, func() { _ = syscall.Munmap(data) }, true
}
