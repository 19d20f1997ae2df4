package gateway

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Run starts a gateway and serves until ctx ends; SIGHUP reloads the config file like POST
// /reload. A config the canary rejects at start is returned as the error.
func Run(ctx context.Context, cfg Config) error {
	g, err := New(cfg)
	if err != nil {
		return err
	}
	if err := g.Start(); err != nil {
		_ = g.Close()
		return err
	}
	g.log.Info("gateway: listening", "proxy", g.Addr(), "admin", g.AdminAddr(), "upstream", g.UpstreamURL(),
		"workers", g.cfg.Workers, "pid", os.Getpid())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return g.Close()
		case <-hup:
			if err := g.ReloadFromFile(); err != nil {
				g.log.Error("gateway: SIGHUP reload", "err", err)
			}
		}
	}
}
