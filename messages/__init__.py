"""The SFM wire: routing keys, JSON Schemas, message dataclasses, error codes and the RabbitMQ runtime."""
