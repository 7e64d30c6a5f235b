package sshx

import (
	"context"
	"sync"
)

// DefaultParallel bounds how many hosts are worked on at once (--parallel).
// Handshakes are further capped per destination by Options.MaxHandshakes.
const DefaultParallel = 64

// ForEach calls fn(ctx, i) for i in [0,n), at most parallel at a time, and
// returns when all have returned. fn reports its own errors (per host).
func ForEach(ctx context.Context, n, parallel int, fn func(ctx context.Context, i int)) {
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			fn(ctx, i)
		}(i)
	}
	wg.Wait()
}
