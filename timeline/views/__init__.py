"""Thin views: parse input, call one selector or service, render."""
