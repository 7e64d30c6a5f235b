// Package fanout runs one function over many items, a bounded number at
// once: the fan-out the run and rlab down share. It imports nothing of
// rlab's (internal/archtest).
package fanout

import (
	"context"
	"errors"
	"sync"
)

// Each runs f for every item, at most n at once, and joins their errors;
// once ctx ends, the items not started fail with its error.
func Each[T any](ctx context.Context, items []T, n int, f func(context.Context, T) error) error {
	sem := make(chan struct{}, max(n, 1))
	var wg sync.WaitGroup
	errs := make([]error, len(items))
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			errs[i] = f(ctx, it)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
