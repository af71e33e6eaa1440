"""The program interpreter: RepOps-only execution, node traces, single-node recomputation."""

from trainer.interp.interpreter import Interpreter, InterpreterError, NodeRecord, Trace

__all__ = ["Interpreter", "InterpreterError", "NodeRecord", "Trace"]
