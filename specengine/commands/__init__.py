"""CLI commands, one module each; importing a module registers its command on specengine.cli.app."""
