"""Chain side of Refereed Training: build, deploy, typed clients, agents, CLI."""
