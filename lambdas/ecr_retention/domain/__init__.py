"""The pure domain: models, rule evaluation and simulators. Imports neither boto3 nor Powertools."""
