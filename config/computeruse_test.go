package config_test

import (
	"strings"
	"testing"

	"github.com/saucerhq/saucer/config"
)

func TestComputerUseSetting(t *testing.T) {
	cfg, err := config.FromYAML(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.ComputerUse != "auto" {
		t.Errorf("agent.computer_use defaults to %q, want auto", cfg.Agent.ComputerUse)
	}
	if cfg, err := config.FromYAML([]byte("agent: {computer_use: off}\n")); err != nil || cfg.Agent.ComputerUse != "off" {
		t.Errorf("off: %v, %v", cfg, err)
	}
	bad, err := config.FromYAML([]byte("agent: {computer_use: always}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `agent.computer_use is "always": use auto`) {
		t.Errorf("always: %v", err)
	}
}
