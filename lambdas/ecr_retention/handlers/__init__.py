"""Thin Lambda entry points: parse the event, call one service, record metrics, return an output model."""
