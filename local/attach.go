package local

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/internal/remote"
)

// AttachOptions tune how an attached device reconnects. Zero values take
// the client's defaults; a device on loopback (tests, eval trials) may
// use short ones.
type AttachOptions struct {
	MinBackoff, MaxBackoff, RegisterTimeout time.Duration
}

// Attach connects dev to the agent server at url (ws://HOST:PORT/ws) as
// client id, as `saucer client` does, and returns once the server has its
// registration (or ctx, or a minute, has ended). stop ends the connection
// and closes dev (once, however often it is called); on an error dev is
// closed already.
func Attach(ctx context.Context, dev *client.Client, url, token, id string, o AttachOptions) (stop func(), err error) {
	rc, err := remote.New(dev, remote.Options{URL: url, Token: token, ClientID: id, MinBackoff: o.MinBackoff,
		MaxBackoff: o.MaxBackoff, RegisterTimeout: o.RegisterTimeout, Logf: func(string, ...any) {}})
	if err != nil {
		dev.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rc.Run(rctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			dev.Close()
		})
	}
	wait, stopWait := context.WithTimeout(ctx, time.Minute)
	defer stopWait()
	select {
	case <-rc.Connected():
		return stop, nil
	case <-done:
		stop()
		return nil, errors.New("its client stopped before it registered")
	case <-wait.Done():
		stop()
		return nil, fmt.Errorf("it did not register: %w", context.Cause(wait))
	}
}
