package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
)

func newToolsCmd(g *globalFlags) *cobra.Command {
	var workdir, app string
	var schemas bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools the device offers (what get_mcp_tools returns)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.load()
			if err != nil {
				return err
			}
			dev, err := local.DeviceFor(cmd.Context(), cfg, workdir, app)
			if err != nil {
				return err
			}
			defer dev.Close()
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAMESPACE\tTOOL\tTYPE\tDESCRIPTION")
			for _, t := range dev.Tools("", "") {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Namespace, t.Name, t.ToolType, oneLine(t.Description, 80))
				if schemas {
					fmt.Fprintf(w, "\t\t\t%s\n", t.InputSchema)
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVarP(&workdir, "workdir", "C", ".", "working directory for the shell and the files root")
	cmd.Flags().StringVar(&app, "app", "", "start the MCP server set named under mcp.apps in the config (default: mcp.use)")
	cmd.Flags().BoolVar(&schemas, "schemas", false, "print each tool's input schema")
	return cmd
}

func newFSMCmd() *cobra.Command {
	var mermaid bool
	cmd := &cobra.Command{
		Use:   "fsm",
		Short: "Show the agents' state machines",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if mermaid {
				fmt.Fprint(out, fsm.MermaidAll())
				return nil
			}
			for _, r := range []fsm.Role{fsm.Host, fsm.App} {
				fmt.Fprintf(out, "%s:\n", r)
				t := fsm.Table(r)
				for _, s := range fsm.States(r) {
					fmt.Fprintf(out, "  %-10s → %v\n", s, t[s])
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&mermaid, "mermaid", false, "print the diagrams as Mermaid")
	return cmd
}

func newConfigCmd(g *globalFlags) *cobra.Command {
	var workdir, app string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the effective config (defaults, file, environment and flags; secrets redacted) and check it as run would",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.load()
			if cfg == nil {
				return err
			}
			b, yerr := cfg.YAML()
			if yerr != nil {
				return yerr
			}
			if _, werr := cmd.OutOrStdout().Write(b); werr != nil {
				return werr
			}
			if err == nil {
				err = session.Check(cfg, workdir, app)
			}
			if err != nil {
				return fmt.Errorf("%w (saucer run would refuse this config)", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&workdir, "workdir", "C", ".", "working directory to check the config against, as run would use it")
	cmd.Flags().StringVar(&app, "app", "", "check the MCP server set named under mcp.apps")
	return cmd
}
