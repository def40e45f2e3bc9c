"""The CDK constructs and the stack of ecr-retention; no business logic lives here."""
