"""What the recipes' figure scripts share: the look of a finished line plot."""


def finish(fig, ax, xlabel, ylabel, title, legend_size=None):
    """Axis labels, title, a light grid and the legend; then a tight layout."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=legend_size)
    fig.tight_layout()
