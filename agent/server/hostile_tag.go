//go:build rlabhostile

package server

// EnableHostile makes an agent built with -tags rlabhostile misbehave in the
// given mode (one of HostileModes). It exists only in such test builds.
func EnableHostile(opts *Options, mode string) error {
	if err := validHostile(mode); err != nil {
		return err
	}
	opts.hostile = mode
	return nil
}
