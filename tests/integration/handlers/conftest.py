"""The handlers on moto: see support.lambda_stack."""

from support.lambda_stack import stack

__all__ = ["stack"]
