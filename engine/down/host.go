package down

import (
	"context"
	"errors"
	"sync"

	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/runstate"
)

// Host is a host's agent as down uses it: typed calls, and the end of the
// session. engine/run's Host satisfies it.
type Host interface {
	Name() string
	rpc.Caller
	Close() error
}

// Connector reaches a host as state.json recorded it (its address, user,
// keys and bastions), with an agent named for runID. engine/run's
// DownConnector makes one of the run's connectors (SSH, as rlab run
// connects).
type Connector interface {
	Connect(ctx context.Context, h runstate.Host, runID string) (Host, error)
}

// each runs f for every item, at most n at once, and joins their errors;
// once ctx ends, the items not started fail with its error.
func each[T any](ctx context.Context, items []T, n int, f func(context.Context, T) error) error {
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
