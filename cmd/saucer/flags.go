package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/saucerhq/saucer/config"
)

// A flag that stands for a config key is checked by the config's own
// Validate, so that a value the config file would be refused for is
// refused on the command line too, with the same message; a numeric flag
// with no config key is checked by its bound here. Both are checked only
// when the flag is given: leaving a flag out keeps its default.

// configFlag is a flag that replaces a config key's value.
type configFlag struct {
	name string                 // the flag
	key  string                 // the config key it stands for
	set  func(c *config.Config) // puts the flag's value in c
}

// overConfig puts the given flags' values in cfg (already valid, as
// g.load returns it), each checked by cfg.Validate: a value the config
// would refuse is refused naming the flag, with the config's message.
func overConfig(cmd *cobra.Command, cfg *config.Config, flags ...configFlag) error {
	for _, f := range flags {
		fl := cmd.Flags().Lookup(f.name)
		if fl == nil || !fl.Changed {
			continue
		}
		f.set(cfg)
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("--%s %s is refused as %s would be in a config file: %w", f.name, fl.Value, f.key, err)
		}
	}
	return nil
}

// bound is the range a numeric flag's value must be in when given:
// [min, max], or above min when open; durations in seconds.
type bound struct {
	name     string
	min, max float64
	open     bool   // min itself is out
	give     string // what to give instead
}

// minSuccessBound bounds eval's --min-success.
var minSuccessBound = bound{name: "min-success", min: 0, max: 1, give: "give a rate from 0 to 1"}

// atLeast1 bounds a count flag.
func atLeast1(name, give string) bound { return bound{name: name, min: 1, max: inf, give: give} }

// positive bounds a duration flag.
func positive(name, give string) bound {
	return bound{name: name, min: 0, max: inf, open: true, give: give}
}

const inf = 1e308

// checkBounds refuses a given numeric flag out of its bound, naming the
// flag, its value and what to give.
func checkBounds(cmd *cobra.Command, bounds ...bound) error {
	for _, b := range bounds {
		fl := cmd.Flags().Lookup(b.name)
		if fl == nil || !fl.Changed {
			continue
		}
		v, err := flagNumber(fl)
		if err != nil {
			return fmt.Errorf("--%s %s: %v", b.name, fl.Value, err)
		}
		if v < b.min || (b.open && v == b.min) || v > b.max || v != v {
			return fmt.Errorf("--%s %s is out of range: %s", b.name, fl.Value, b.give)
		}
	}
	return nil
}

// flagNumber is a numeric flag's value: a duration in seconds.
func flagNumber(fl *pflag.Flag) (float64, error) {
	if fl.Value.Type() == "duration" {
		d, err := time.ParseDuration(fl.Value.String())
		return d.Seconds(), err
	}
	return strconv.ParseFloat(fl.Value.String(), 64)
}
