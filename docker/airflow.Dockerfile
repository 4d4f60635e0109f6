# One image for the Airflow services and the Spark master/worker, so the driver (running in the
# Airflow task) and the executors share the same Python, pyspark and delivery_audit.
FROM apache/airflow:3.3.2-python3.11

USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless curl procps \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java
ENV JAVA_HOME=/opt/java

USER airflow
COPY --chown=airflow:root pyproject.toml README.md /opt/delivery-audit/
COPY --chown=airflow:root src /opt/delivery-audit/src
# the GX suites: src/delivery_audit/expectations links to this folder
COPY --chown=airflow:root expectations /opt/delivery-audit/expectations
# editable: the project mounted over /opt/delivery-audit at run time is what runs
RUN pip install --no-cache-dir "apache-airflow==3.3.2" -e "/opt/delivery-audit[airflow]"
WORKDIR /opt/delivery-audit
