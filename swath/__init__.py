"""swath: harvest social media and metadata into WARCs over RabbitMQ, and export them."""

__version__ = "0.1.0"
